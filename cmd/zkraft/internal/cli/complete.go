package cli

import (
	"slices"
	"strings"
)

// completion is what Tab does to a line: the line with the word before the
// cursor completed as far as it is unambiguous, and when it is ambiguous
// and nothing could be added, the candidates to show.
type completion struct {
	line       string
	pos        int
	candidates []string
}

// complete completes the word before pos in line: the first word from the
// command names, a later word that starts with "/" from the children of its
// parent, which list returns (nil when the parent cannot be listed).
func complete(line string, pos int, commands []string, list func(parent string) []string) (completion, bool) {
	before, after := line[:pos], line[pos:]
	start := strings.LastIndexAny(before, " \t") + 1
	word := before[start:]
	var prefix, partial string // the part of word kept, and the part completed
	var names []string
	switch {
	case strings.TrimSpace(before[:start]) == "":
		partial, names = word, commands
	case strings.HasPrefix(word, "/"):
		cut := strings.LastIndexByte(word, '/')
		prefix, partial = word[:cut+1], word[cut+1:]
		parent := prefix
		if len(parent) > 1 {
			parent = strings.TrimSuffix(parent, "/")
		}
		names = list(parent)
	default:
		return completion{}, false
	}
	var matches []string
	for _, n := range names {
		if strings.HasPrefix(n, partial) {
			matches = append(matches, n)
		}
	}
	if len(matches) == 0 {
		return completion{}, false
	}
	slices.Sort(matches)
	done := commonPrefix(matches)
	if len(matches) == 1 {
		done += " "
		if prefix != "" {
			done = strings.TrimSuffix(done, " ") // a path may go on: /a<Tab> then /
		}
	}
	c := completion{line: before[:start] + prefix + done + after, pos: start + len(prefix) + len(done)}
	if len(matches) > 1 && done == partial {
		c.candidates = matches
	}
	return c, true
}

func commonPrefix(words []string) string {
	p := words[0]
	for _, w := range words[1:] {
		for !strings.HasPrefix(w, p) {
			p = p[:len(p)-1]
		}
	}
	return p
}
