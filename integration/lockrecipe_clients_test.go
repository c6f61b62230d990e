//go:build clients

// Go's lockrecipe and Curator 5.4 on the same paths: a Go holder and a
// Curator holder exclude each other, and each sees the other's nodes in the
// same order, for the mutex, the read/write lock, the semaphore and the
// leader latch. Curator runs in integration/clients/LockInterop.java, which
// this test drives line by line, against an in-process zkraft and, when
// ZKRAFT_REALZK names one, a real ZooKeeper:
//
//	go test -tags clients -run Clients_LockRecipe -v ./integration
//	ZKRAFT_REALZK=127.0.0.1:12181 go test -tags clients -run Clients_LockRecipe -v ./integration
package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zkraft/zkraft/lockrecipe"
)

func TestClients_LockRecipeWithCurator(t *testing.T) {
	need(t, "openjdk-17-jre-headless libzookeeper-java libcurator-recipes-java libcurator-framework-java",
		"/usr/share/java/zookeeper.jar", "/usr/share/java/curator-recipes.jar")
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("java is missing: apt-get install openjdk-17-jre-headless")
	}
	for _, tg := range clientTargets(t) {
		t.Run(tg[0], func(t *testing.T) {
			path := fmt.Sprintf("/lockrecipe-interop-%x", time.Now().UnixNano())
			j := startCurator(t, tg[1], path)
			a, b := mustConnect(t, tg[1]), mustConnect(t, tg[1])
			t.Run("mutex", func(t *testing.T) { curatorMutex(t, j, a, path+"/mutex") })
			t.Run("mutex stress", func(t *testing.T) { curatorMutexStress(t, j, a) })
			t.Run("read/write", func(t *testing.T) { curatorReadWrite(t, j, a, b, path+"/rw") })
			t.Run("semaphore", func(t *testing.T) { curatorSemaphore(t, j, a, path+"/sem") })
			t.Run("election", func(t *testing.T) { curatorElection(t, j, a, path+"/election") })
		})
	}
}

// curatorMutex: a Curator holder keeps Go out, Curator lists the waiting Go
// node as its successor, Go gets the lock when Curator lets go, and then
// keeps Curator out.
func curatorMutex(t *testing.T, j *curator, conn *zk.Conn, path string) {
	ctx := lockContext(t)
	m := lockrecipe.NewMutex(conn, path)
	j.call("lock", "locked")
	ok, err := m.TryLock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "Go's TryLock while Curator holds")
	assert.ErrorIs(t, m.Lock(shortLockContext(t)), context.DeadlineExceeded, "Go's Lock waits while Curator holds")
	waitLockNodes(t, conn, path, 1)

	got := make(chan *lockrecipe.Lease, 1)
	go func() {
		lease, err := m.Acquire(ctx)
		assert.NoError(t, err)
		got <- lease
	}()
	nodes := waitLockNodes(t, conn, path, 2)
	participants := strings.Split(strings.TrimPrefix(j.ask("participants"), "participants "), ",")
	require.Len(t, participants, 2, "Curator sees both contenders")
	j.call("unlock", "unlocked")
	lease := receiveWithin(t, got, "Go gets the lock after Curator")
	require.NotNil(t, lease)
	assert.Equal(t, participants[1], lease.Node(), "Curator orders the Go node second, as Go does")
	assert.Contains(t, nodes, filepath.Base(lease.Node()))

	j.call("trylock 200", "busy")
	j.send("lock")
	waitLockNodes(t, conn, path, 2)
	require.NoError(t, lease.Release())
	j.expect("locked")
	j.call("unlock", "unlocked")
}

// curatorMutexStress has Go and Curator take the mutex 50 times each at
// once; inside, each creates the same marker file exclusively.
func curatorMutexStress(t *testing.T, j *curator, conn *zk.Conn) {
	ctx := lockContext(t)
	marker := filepath.Join(t.TempDir(), "held")
	const rounds = 50
	j.send(fmt.Sprintf("stress %d %s", rounds, marker))
	m := lockrecipe.NewMutex(conn, j.path+"/mutex")
	for i := range rounds {
		require.NoError(t, m.Lock(ctx))
		f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			t.Fatalf("round %d: Curator holds the lock while Go does", i)
		}
		require.NoError(t, err)
		f.Close()
		require.NoError(t, os.Remove(marker))
		require.NoError(t, m.Unlock())
	}
	j.expect(fmt.Sprintf("stress ok %d", rounds))
}

// curatorReadWrite: Go and Curator readers share; a writer of either kind
// waits for readers of the other, and keeps them out while it holds.
func curatorReadWrite(t *testing.T, j *curator, a, b *zk.Conn, path string) {
	ctx := lockContext(t)
	reader, writer := lockrecipe.NewRWMutex(a, path), lockrecipe.NewRWMutex(b, path)
	j.call("rlock", "rlocked")
	require.NoError(t, reader.RLock(ctx), "a Go reader shares with a Curator reader")
	assert.ErrorIs(t, writer.Lock(shortLockContext(t)), context.DeadlineExceeded, "a Go writer waits for both")
	j.call("runlock", "runlocked")

	j.send("wlock")
	waitLockNodes(t, a, path, 2)
	require.NoError(t, reader.RUnlock())
	j.expect("wlocked")
	assert.ErrorIs(t, reader.RLock(shortLockContext(t)), context.DeadlineExceeded, "no Go reader while Curator writes")
	got := make(chan error, 1)
	go func() { got <- reader.RLock(ctx) }()
	waitLockNodes(t, a, path, 2)
	j.call("wunlock", "wunlocked")
	require.NoError(t, receiveWithin(t, got, "the Go reader after Curator's writer"))
	j.call("tryrlock 2000", "rlocked")
	j.call("trywlock 200", "busy")
	j.call("runlock", "runlocked")
	require.NoError(t, reader.RUnlock())

	require.NoError(t, writer.Lock(ctx))
	j.call("tryrlock 200", "busy")
	require.NoError(t, writer.Unlock())
	j.call("tryrlock 2000", "rlocked")
	j.call("runlock", "runlocked")
}

// curatorSemaphore: InterProcessSemaphoreV2 and Semaphore count each
// other's leases.
func curatorSemaphore(t *testing.T, j *curator, conn *zk.Conn, path string) {
	ctx := lockContext(t)
	sem := lockrecipe.NewSemaphore(conn, path, 2)
	j.call("sem", "leased")
	l1, err := sem.Acquire(ctx)
	require.NoError(t, err)
	_, err = sem.Acquire(shortLockContext(t))
	assert.ErrorIs(t, err, context.DeadlineExceeded, "two leases taken, one by Curator")
	j.call("unsem", "unleased")
	l2, err := sem.Acquire(ctx)
	require.NoError(t, err, "Curator's lease came back")
	j.call("trysem 200", "busy")
	require.NoError(t, l1.Release())
	j.call("trysem 5000", "leased")
	j.call("unsem", "unleased")
	require.NoError(t, l2.Release())
}

// curatorElection: LeaderLatch and Election elect one leader among both,
// and agree on who it is.
func curatorElection(t *testing.T, j *curator, conn *zk.Conn, path string) {
	ctx := lockContext(t)
	e := lockrecipe.NewElection(conn, path)
	j.call("latch java", "leading")
	leader, err := e.Leader()
	require.NoError(t, err)
	assert.Equal(t, "java", leader)
	got := make(chan error, 1)
	go func() { got <- e.Campaign(ctx, "go") }()
	waitLockNodes(t, conn, path, 2)
	j.call("leader", "leader java")
	j.call("unlatch", "unlatched")
	require.NoError(t, receiveWithin(t, got, "Go elected after the latch closed"))
	j.call("join java2", "joined")
	waitLockNodes(t, conn, path, 2)
	j.call("leader", "leader go") // Curator reads the Go leader's id
	j.send("await")
	require.NoError(t, e.Resign())
	j.expect("leading")
	j.call("leader", "leader java2")
	leader, err = e.Leader()
	require.NoError(t, err)
	assert.Equal(t, "java2", leader)
	j.call("unlatch", "unlatched")
}

// curator is a running LockInterop.
type curator struct {
	t     *testing.T
	path  string
	stdin io.WriteCloser
	lines chan string
}

func startCurator(t *testing.T, addr, path string) *curator {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, "java", "-cp", javaClasspath(), filepath.Join("clients", "LockInterop.java"), addr, path)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = &curatorStderr{t: t}
	require.NoError(t, cmd.Start())
	j := &curator{t: t, path: path, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(j.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			j.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		fmt.Fprintln(stdin, "quit")
		stdin.Close()
		for range j.lines {
		}
		assert.NoError(t, cmd.Wait(), "LockInterop exits cleanly")
		cancel()
	})
	j.expect("ready")
	return j
}

func (j *curator) send(cmd string) {
	j.t.Helper()
	_, err := fmt.Fprintln(j.stdin, cmd)
	require.NoError(j.t, err)
}

// ask sends a command and returns its answer.
func (j *curator) ask(cmd string) string {
	j.t.Helper()
	j.send(cmd)
	return j.next(cmd)
}

// call sends a command and checks its answer.
func (j *curator) call(cmd, want string) {
	j.t.Helper()
	require.Equal(j.t, want, j.ask(cmd), "Curator's answer to %q", cmd)
}

// expect checks the next answer.
func (j *curator) expect(want string) {
	j.t.Helper()
	require.Equal(j.t, want, j.next(want), "Curator's answer")
}

func (j *curator) next(what string) string {
	j.t.Helper()
	select {
	case line, ok := <-j.lines:
		require.True(j.t, ok, "LockInterop ended while waiting for %q", what)
		return line
	case <-time.After(time.Minute):
		j.t.Fatalf("no answer from Curator for %q within a minute", what)
		return ""
	}
}

// curatorStderr logs a process's stderr to the test.
type curatorStderr struct{ t *testing.T }

func (w *curatorStderr) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitLockNodes waits until path has n children and returns them.
func waitLockNodes(t *testing.T, conn *zk.Conn, path string, n int) []string {
	t.Helper()
	var names []string
	waitCondition(t, fmt.Sprintf("%d nodes under %s", n, path), func() error {
		var err error
		names, _, err = conn.Children(path)
		if err == nil && len(names) != n {
			err = fmt.Errorf("%d children: %v", len(names), names)
		}
		return err
	})
	return slices.Clone(names)
}

func receiveWithin[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("%s: not within %v", what, waitTimeout)
		var zero T
		return zero
	}
}

func lockContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// shortLockContext bounds a wait that must not succeed.
func shortLockContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}
