package cli

import (
	"github.com/zkraft/zkraft/wire"
	"strings"
)

// watchKind is the set of watches the session holds on a path, kept so
// that removewatches can say which it removed, as ZooKeeper's client does.
type watchKind uint8

const (
	watchData       watchKind = 1 << iota // get -w, stat -w
	watchExist                            // stat -w on a node that is not there
	watchChild                            // ls -w
	watchPersistent                       // addWatch -m PERSISTENT
	watchRecursive                        // addWatch (PERSISTENT_RECURSIVE)
)

// event prints an event if printwatches is on, and forgets the one-time
// watches it used up. It runs on the client's reader goroutine.
func (s *shell) event(ev event) {
	s.mu.Lock()
	print := s.printWatches
	if ev.path != "" {
		k := s.watches[ev.path]
		switch ev.typ {
		case wire.EventNodeCreated, wire.EventNodeDataChanged:
			k &^= watchData | watchExist
		case wire.EventNodeChildrenChanged:
			k &^= watchChild
		case wire.EventNodeDeleted:
			k &^= watchData | watchExist | watchChild
		}
		s.setWatch(ev.path, k)
	}
	repaint := s.repaint
	shown := s.shownPrompt
	s.mu.Unlock()
	if state, ok := stateAfter(ev); ok && repaint != nil {
		// Before the event is printed: printing draws the prompt again,
		// and it should say what the connection is now.
		repaint(withState(shown, state))
	}
	if print {
		printEvent(s.stdout, ev)
	}
}

// stateAfter is the connection's state once a state event is reported
// (after a disconnection the client is connecting again at once).
func stateAfter(ev event) (State, bool) {
	if ev.typ != eventNone || ev.path != "" {
		return "", false
	}
	switch ev.state {
	case keeperSyncConnected:
		return StateConnected, true
	case keeperReadOnly:
		return StateConnectedRO, true
	case keeperDisconnected:
		return StateConnecting, true
	case keeperExpired, keeperClosed:
		return StateClosed, true
	case keeperAuthFailed:
		return StateAuthFailed, true
	}
	return "", false
}

// withState is a prompt with its connection state replaced by state.
func withState(prompt string, state State) string {
	open := strings.LastIndex(prompt, "(")
	end := strings.LastIndex(prompt, ")")
	if open < 0 || end < open {
		return prompt
	}
	return prompt[:open+1] + string(state) + prompt[end:]
}

// setWatch records the watches on path; s.mu must be held.
func (s *shell) setWatch(path string, k watchKind) {
	if k == 0 {
		delete(s.watches, path)
	} else {
		s.watches[path] = k
	}
}

func (s *shell) addWatchKind(path string, k watchKind) {
	s.mu.Lock()
	s.setWatch(path, s.watches[path]|k)
	s.mu.Unlock()
}

// removeWatches is `removewatches path [-c|-d|-a] [-l]`: it asks the server
// to drop the session's watches of the kind on path and reports each kind
// removed as an event. With -l, watches are dropped here even when the
// server cannot be reached.
func (s *shell) removeWatches(o opts, args []string) error {
	path := args[0]
	typ, kinds := wire.WatcherTypeAny, watchData|watchExist|watchChild|watchPersistent|watchRecursive
	switch {
	case o.has('c'):
		typ, kinds = wire.WatcherTypeChildren, watchChild
	case o.has('d'):
		typ, kinds = wire.WatcherTypeData, watchData|watchExist
	}
	s.mu.Lock()
	held := s.watches[path] & kinds
	s.mu.Unlock()
	if held == 0 {
		return codeError{wire.CodeNoWatcher, path}
	}
	c, err := s.conn()
	if err != nil {
		return err
	}
	code, err := c.call(wire.OpRemoveWatches, &wire.RemoveWatchesRequest{Path: c.abs(path), Type: typ}, nil)
	if err != nil && !o.has('l') {
		return codeError{wire.CodeConnectionLoss, path}
	}
	if err == nil && code != wire.CodeOK {
		return codeError{code, path}
	}
	s.mu.Lock()
	s.setWatch(path, s.watches[path]&^held)
	print := s.printWatches
	s.mu.Unlock()
	if !print {
		return nil
	}
	for _, r := range []struct {
		k   watchKind
		typ wire.EventType
	}{{watchChild, eventChildWatchRemoved}, {watchData | watchExist, eventDataWatchRemoved},
		{watchPersistent | watchRecursive, eventPersistentWatchRemoved}} {
		if held&r.k != 0 {
			printEvent(s.stdout, event{state: keeperSyncConnected, typ: r.typ, path: path})
		}
	}
	return nil
}

// watchList is the session's watches by kind, for the client to set again
// when it resumes the session on a new connection.
func (s *shell) watchList() wire.SetWatches2 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w wire.SetWatches2
	for path, k := range s.watches {
		for _, kl := range []struct {
			k    watchKind
			list *[]string
		}{{watchData, &w.DataWatches}, {watchExist, &w.ExistWatches}, {watchChild, &w.ChildWatches},
			{watchPersistent, &w.PersistentWatches}, {watchRecursive, &w.PersistentRecursiveWatches}} {
			if k&kl.k != 0 {
				*kl.list = append(*kl.list, path)
			}
		}
	}
	return w
}
