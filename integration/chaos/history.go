package chaos

import (
	"math"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// history records operations as porcupine sees them: when each was
// called and when it returned, on one monotonic clock.
type history struct {
	start time.Time

	mu  sync.Mutex
	ops []porcupine.Operation
}

func newHistory() *history { return &history{start: time.Now()} }

// now is the time on the history's clock.
func (h *history) now() int64 { return int64(time.Since(h.start)) }

// add records an operation that returned at ret.
func (h *history) add(client int, in regInput, call int64, out regOutput, ret int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// operations returns the history. An indeterminate write may take effect
// at any time after its call, even after the run: it returns at the end of
// time.
func (h *history) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]porcupine.Operation, len(h.ops))
	copy(out, h.ops)
	for i := range out {
		if out[i].Output.(regOutput).Outcome == regIndeterminate {
			out[i].Return = math.MaxInt64
		}
	}
	return out
}
