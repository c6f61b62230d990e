package loadgen

import (
	"fmt"
	"slices"
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

// RemoveRoot deletes a run's root and everything under it, listing the
// tree level by level and deleting it deepest first, each step pipelined.
func RemoveRoot(addr, root string) error {
	s, err := dial(firstAddr(addr))
	if err != nil {
		return err
	}
	defer s.close()
	levels := [][]string{{root}}
	for {
		above := levels[len(levels)-1]
		var next []string
		err := s.pipelineReplies(len(above), 256, func(k int) {
			s.send(wire.OpGetChildren, &wire.PathWatchRequest{Path: above[k]})
		}, func(k int, h wire.ReplyHeader, body []byte) error {
			if h.Err == wire.CodeNoNode {
				return nil // gone meanwhile: an empty container reaped, an ephemeral expired
			}
			if h.Err != wire.CodeOK {
				return fmt.Errorf("list %s: %v", above[k], h.Err)
			}
			var kids wire.GetChildrenResponse
			if _, err := kids.Decode(body); err != nil {
				return err
			}
			for _, c := range kids.Children {
				next = append(next, above[k]+"/"+c)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if len(next) == 0 {
			break
		}
		levels = append(levels, next)
	}
	for _, paths := range slices.Backward(levels) {
		err := s.pipeline(len(paths), 256, func(k int) {
			s.send(wire.OpDelete, &wire.DeleteRequest{Path: paths[k], Version: -1})
		}, func(k int, code wire.Code) error {
			if code != wire.CodeOK && code != wire.CodeNoNode {
				return fmt.Errorf("delete %s: %v", paths[k], code)
			}
			return nil
		})
		if err != nil {
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
