package cli

import (
	"fmt"
	"slices"
	"strings"
)

// command is one of the shell's commands: its name, zkCli's usage text
// for it, the options it takes, and how many arguments besides them.
type command struct {
	name  string
	usage string // what follows the name in the usage line
	// flags lists the options: a letter alone is a switch, a letter and
	// a colon takes a value ("sv:" is -s, and -v with a value).
	flags    string
	min, max int // positional arguments (max -1: any)
	run      func(s *shell, o opts, args []string) error
}

// commands is the shell's table, in the order zkCli's help lists them.
var commands = []*command{
	{"addWatch", "[-m mode] path # optional mode is one of [PERSISTENT, PERSISTENT_RECURSIVE] - default is PERSISTENT_RECURSIVE", "m:", 1, 1, (*shell).addWatch},
	{"addauth", "scheme auth", "", 1, 2, (*shell).addAuth},
	{"close", "", "", 0, -1, (*shell).close},
	{"config", "[-c] [-w] [-s]", "cws", 0, 0, (*shell).config},
	{"connect", "host:port", "", 0, 1, (*shell).connect},
	{"create", "[-s] [-e] [-c] [-t ttl] path [data] [acl]", "sect:", 1, 3, (*shell).create},
	{"delete", "[-v version] path", "v:", 1, 1, (*shell).delete},
	{"deleteall", "path [-b batch size]", "b:", 1, 1, (*shell).deleteAll},
	{"get", "[-s] [-w] path", "sw", 1, 2, (*shell).get},
	{"getAcl", "[-s] path", "s", 1, 1, (*shell).getACL},
	{"getAllChildrenNumber", "path", "", 1, 1, (*shell).allChildrenNumber},
	{"getEphemerals", "path", "", 0, 1, (*shell).ephemerals},
	{"history", "", "", 0, -1, (*shell).listHistory},
	{"ls", "[-s] [-w] [-R] path", "swR", 1, 2, (*shell).ls},
	{"printwatches", "on|off", "", 0, 1, (*shell).printWatchesCmd},
	{"quit", "", "", 0, -1, (*shell).quit},
	{"redo", "cmdno", "", 1, 1, nil}, // run by the shell's loop, which owns the history
	{"removewatches", "path [-c|-d|-a] [-l]", "cdal", 1, 1, (*shell).removeWatches},
	{"set", "[-s] [-v version] path data", "sv:", 2, 2, (*shell).set},
	{"setAcl", "[-s] [-v version] [-R] path acl", "sv:R", 2, 2, (*shell).setACL},
	{"stat", "[-w] path", "w", 1, 2, (*shell).stat},
	{"sync", "path", "", 1, 1, (*shell).sync},
	{"version", "", "", 0, -1, (*shell).version},
	{"whoami", "", "", 0, -1, (*shell).whoAmI},
}

func lookup(name string) *command {
	i := slices.IndexFunc(commands, func(c *command) bool { return c.name == name })
	if i < 0 {
		return nil
	}
	return commands[i]
}

func commandNames() []string {
	names := make([]string, len(commands))
	for i, c := range commands {
		names[i] = c.name
	}
	return names
}

func (c *command) usageLine() string { return c.name + " " + c.usage }

// opts are the options given to a command.
type opts map[byte]string

func (o opts) has(letter byte) bool {
	_, ok := o[letter]
	return ok
}

// parseArgs splits a command's words into options and arguments. Options
// may stand anywhere, as zkCli's parser allows, so a word that starts with
// "-" is always an option (data such as "-1" cannot be given, in zkCli
// either). Switches may be bundled (-sw), a value attached (-v0).
func (c *command) parseArgs(words []string) (opts, []string, error) {
	o := opts{}
	var args []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if len(w) < 2 || w[0] != '-' {
			args = append(args, w)
			continue
		}
		if c.switches(w[1:]) {
			for j := 1; j < len(w); j++ {
				o[w[j]] = "" // -sw is -s -w
			}
			continue
		}
		letter := w[1]
		at := strings.IndexByte(c.flags, letter)
		if at < 0 || at+1 >= len(c.flags) || c.flags[at+1] != ':' {
			return nil, nil, cliError("Unrecognized option: " + w)
		}
		switch {
		case len(w) > 2:
			o[letter] = w[2:] // -v5
		case i+1 < len(words):
			i++
			o[letter] = words[i]
		default:
			return nil, nil, cliError(fmt.Sprintf("Missing argument for option: %c", letter))
		}
	}
	if len(args) < c.min || c.max >= 0 && len(args) > c.max {
		return nil, nil, errUsage
	}
	return o, args, nil
}

// switches reports whether every letter is an option without a value.
func (c *command) switches(letters string) bool {
	for i := 0; i < len(letters); i++ {
		at := strings.IndexByte(c.flags, letters[i])
		if letters[i] == ':' || at < 0 || at+1 < len(c.flags) && c.flags[at+1] == ':' {
			return false
		}
	}
	return true
}

// splitLine splits a typed line into words as zkCli does: at white space,
// with a word in double or single quotes kept whole and unquoted.
func splitLine(line string) []string {
	var words []string
	for {
		line = strings.TrimLeft(line, " \t")
		if line == "" {
			return words
		}
		if q := line[0]; q == '"' || q == '\'' {
			if end := strings.IndexByte(line[1:], q); end >= 0 {
				words = append(words, line[1:end+1])
				line = line[end+2:]
				continue
			}
		}
		end := strings.IndexAny(line, " \t")
		if end < 0 {
			end = len(line)
		}
		words = append(words, line[:end])
		line = line[end:]
	}
}

// usage writes the list of commands zkCli prints for help and for a
// command it does not know.
func (s *shell) usage() {
	fmt.Fprintln(s.stderr, "zkraft cli -server host:port[,host:port...][/chroot] [-timeout ms] [-r] [-history file] cmd args")
	for _, c := range commands {
		fmt.Fprintf(s.stderr, "\t%s\n", c.usageLine())
	}
}
