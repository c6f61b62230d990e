package cli

import (
	"fmt"

	"github.com/zkraft/zkraft/server"
)

// The commands about the shell and its session rather than about nodes.

// close ends the session; closing one that is over already says so.
func (s *shell) close(_ opts, _ []string) error {
	if s.c == nil || s.c.State() == StateClosed || s.c.State() == StateAuthFailed {
		return errNotConnected
	}
	s.c.Close()
	s.c = nil
	return nil
}

// connect ends the session and starts another, with the servers given or,
// without, the same ones again.
func (s *shell) connect(_ opts, args []string) error {
	connect := s.connectString
	if len(args) == 1 {
		if _, _, err := parseConnectString(args[0]); err != nil {
			return cliError(err.Error())
		}
		connect = args[0]
	}
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
	s.connectString = connect
	s.open(connect)
	return nil
}

// quit ends the session and the shell, keeping the last command's status.
func (s *shell) quit(_ opts, _ []string) error {
	status := s.status
	if s.c != nil {
		s.c.Close()
		s.c = nil
	}
	s.quitted = true
	if status != statusOK {
		return errQuietStatus(status)
	}
	return nil
}

// errQuietStatus fails a command with the status it carries, printing
// nothing.
type errQuietStatus int

func (e errQuietStatus) Error() string { return "" }

func (s *shell) printWatchesCmd(_ opts, args []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(args) == 0 {
		state := "off"
		if s.printWatches {
			state = "on"
		}
		_, err := fmt.Fprintf(s.stdout, "printwatches is %s\n", state)
		return err
	}
	s.printWatches = args[0] == "on"
	return nil
}

// listHistory prints the last eleven lines typed, numbered for redo.
func (s *shell) listHistory(_ opts, _ []string) error {
	for i := max(0, len(s.history)-11); i < len(s.history); i++ {
		fmt.Fprintf(s.stdout, "%d - %s\n", i, s.history[i])
	}
	return nil
}

func (s *shell) version(_ opts, _ []string) error {
	_, err := fmt.Fprintf(s.stdout, "ZooKeeper CLI version: %s (zkraft cli)\n", server.Version)
	return err
}
