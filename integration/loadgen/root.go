package loadgen

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zkraft/zkraft/wire"
)

// NewRoot creates a fresh node for a run, named after the current time.
func NewRoot(addr string) (string, error) {
	s, err := dial(firstAddr(addr))
	if err != nil {
		return "", err
	}
	defer s.close()
	root := "/zkload-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	s.send(wire.OpCreate, &wire.CreateRequest{Path: root, ACL: wire.OpenACLUnsafe})
	if err := s.bw.Flush(); err != nil {
		return "", err
	}
	code, err := s.recv()
	if err == nil && code != wire.CodeOK {
		err = fmt.Errorf("create %s: %v", root, code)
	}
	return root, err
}

// RemoveRoot deletes a run's root and everything under it (one level deep,
// as runs create), pipelining the deletes.
func RemoveRoot(addr, root string) error {
	s, err := dial(firstAddr(addr))
	if err != nil {
		return err
	}
	defer s.close()
	s.send(wire.OpGetChildren, &wire.PathWatchRequest{Path: root})
	if err := s.bw.Flush(); err != nil {
		return err
	}
	frame, err := s.fr.Next()
	if err != nil {
		return err
	}
	var h wire.ReplyHeader
	n, err := h.Decode(frame)
	if err != nil || h.Err != wire.CodeOK {
		return fmt.Errorf("list %s: %v %v", root, h.Err, err)
	}
	var kids wire.GetChildrenResponse
	if _, err := kids.Decode(frame[n:]); err != nil {
		return err
	}
	paths := make([]string, 0, len(kids.Children)+1)
	for _, k := range kids.Children {
		paths = append(paths, root+"/"+k)
	}
	paths = append(paths, root)
	for _, p := range paths {
		s.send(wire.OpDelete, &wire.DeleteRequest{Path: p, Version: -1})
	}
	if err := s.bw.Flush(); err != nil {
		return err
	}
	for range paths {
		if _, err := s.recv(); err != nil {
			return err
		}
	}
	return nil
}

// firstAddr returns the first of a comma-separated list of addresses.
func firstAddr(addrs string) string {
	first, _, _ := strings.Cut(addrs, ",")
	return first
}
