//go:build race

package sockio

import (
	"runtime"
	"unsafe"
)

// ioSync stands for the other end of every socket: a write releases it and
// a read acquires it, as golang.org/x/sys/unix and the net package tell the
// race detector.
var ioSync int64

func raceBeforeWrite() { runtime.RaceReleaseMerge(unsafe.Pointer(&ioSync)) }

func raceAfterWrite(p []byte) {
	if len(p) > 0 {
		runtime.RaceReadRange(unsafe.Pointer(&p[0]), len(p))
	}
}

func raceAfterRead(p []byte) {
	if len(p) > 0 {
		runtime.RaceWriteRange(unsafe.Pointer(&p[0]), len(p))
	}
	runtime.RaceAcquire(unsafe.Pointer(&ioSync))
}
