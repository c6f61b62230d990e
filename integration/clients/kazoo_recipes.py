#!/usr/bin/python3
"""kazoo_recipes runs one of python-kazoo's recipes with two clients that
must see each other's work: client A connected to HOSTS_A and client B to
HOSTS_B (a kazoo hosts string each: one member of an ensemble, to pin the
session to it, or the whole list). Each run uses fresh sessions and a fresh
znode path; every wait has a deadline, so a hang is a failure.

    /usr/bin/python3 kazoo_recipes.py RECIPE HOSTS_A HOSTS_B [--runs N]

RECIPE is one of Lock, LockingQueue, Barrier, DoubleBarrier, Election,
Counter, Party, Queue, DataWatch, ChildrenWatch. It prints one "FAIL run I:
why" line per failed run, "NOTE run I: ..." lines for measurements (how soon
a dead contender's session expired, how soon a session moved), then "RESULT
PASSES/RUNS", and exits non-zero if any run failed. A connection that is
suspended or lost while a run is under way fails the run too, except where
a scenario cuts one on purpose. (Election runs this script again as
"--election-child HOSTS PATH", a contender whose process it kills.)

integration/clients_cluster_test.go (build tag "clients") runs every recipe
against a three-member zkraft cluster and, when ZKRAFT_REALZK_CLUSTER names
one, a real ZooKeeper ensemble, with the clients pinned to different members.
"""
import argparse
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import uuid

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.protocol.states import KazooState

WAIT = 30.0       # seconds any one thing may take to happen
RUN_LIMIT = 180.0  # seconds a whole run may take before it counts as hung
CRASH_SESSION = 4.0  # seconds: the session timeout a crashing contender asks for


class Fail(Exception):
    pass


def must(cond, what):
    if not cond:
        raise Fail(what)


def wait_until(cond, what, timeout=WAIT):
    """Polls cond until it holds; fails after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            if cond():
                return
            last = None
        except Fail:
            raise
        except Exception as e:  # noqa: BLE001 - report why the condition could not be read
            last = e
        if time.monotonic() >= deadline:
            raise Fail("timed out after %ss waiting for %s%s" % (
                timeout, what, "" if last is None else " (last error %r)" % (last,)))
        time.sleep(0.01)


class Bg(object):
    """Runs fn(*args) in a daemon thread and keeps its result."""

    def __init__(self, what, fn, *args):
        self.what = what
        self.result = None
        self.error = None
        self.done = threading.Event()

        def body():
            try:
                self.result = fn(*args)
            except BaseException as e:  # noqa: BLE001 - handed to wait()
                self.error = e
            finally:
                self.done.set()
        self.thread = threading.Thread(target=body, name=what, daemon=True)
        self.thread.start()

    def wait(self, timeout=WAIT):
        if not self.done.wait(timeout):
            raise Fail("%s did not return within %ss" % (self.what, timeout))
        if self.error is not None:
            raise Fail("%s raised %r" % (self.what, self.error))
        return self.result


def blocked_in(bg, filename, funcname):
    """Whether bg's thread is parked in a threading wait called straight
    from funcname in kazoo's recipe file filename (not in a request to the
    server, which also waits on a threading condition)."""
    frame = sys._current_frames().get(bg.thread.ident)
    while frame is not None and frame.f_code.co_filename.endswith("threading.py"):
        frame = frame.f_back
    return (frame is not None and frame.f_code.co_name == funcname and
            frame.f_code.co_filename.endswith(filename))


def children(c, path):
    try:
        return sorted(c.get_children(path))
    except NoNodeError:
        return []


class Relay(object):
    """A TCP relay to one member, cut like the network of a client's host:
    its connections close and it accepts no more, so the client behind it
    must go to another member."""

    def __init__(self, target):
        host, port = target.rsplit(":", 1)
        self.target = (host, int(port))
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.socks = []
        self.lock = threading.Lock()
        self.cut_done = False
        threading.Thread(target=self._accept, name="relay " + target, daemon=True).start()

    def _accept(self):
        while True:
            try:
                inner, _ = self.listener.accept()
                outer = socket.create_connection(self.target, timeout=WAIT)
                outer.settimeout(None)
            except OSError:
                return  # cut
            with self.lock:
                if self.cut_done:
                    inner.close()
                    outer.close()
                    return
                self.socks += [inner, outer]
            for a, b in ((inner, outer), (outer, inner)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def carrying(self):
        """Whether a connection through this relay is open."""
        with self.lock:
            return any(s.fileno() >= 0 for s in self.socks)

    def cut(self):
        with self.lock:
            self.cut_done = True
            socks, self.socks = self.socks, []
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()


def members(*hosts_strings):
    """The distinct members named by kazoo hosts strings, in order."""
    out = []
    for h in hosts_strings:
        for m in h.split(","):
            if m not in out:
                out.append(m)
    return out


class Run(object):
    """One run: two fresh sessions and a fresh root znode."""

    def __init__(self, recipe, hosts_a, hosts_b):
        self.root = "/kazoo-recipes-%s-%s" % (recipe.lower(), uuid.uuid4().hex[:12])
        self.hosts_a, self.hosts_b = hosts_a, hosts_b
        self.children = []
        self.notes = []  # measurements worth reporting, printed as NOTE lines
        self.relays = []
        self.drops = []
        self.ending = False
        self.clients = []
        try:
            self.a = self.client("A", hosts_a)
            self.b = self.client("B", hosts_b)
        except BaseException:
            self.close()
            raise

    def client(self, name, hosts, moves=False):
        """A started client; with moves, it may lose its connection (and
        reconnect) without failing the run, but not its session."""
        c = KazooClient(hosts=hosts, timeout=15.0,
                        connection_retry=dict(max_tries=-1, delay=0.1, backoff=1.5, max_delay=2),
                        command_retry=dict(max_tries=-1, delay=0.02, backoff=1.5, max_delay=0.5))
        stopping = []
        c.states = []

        def listener(state):
            c.states.append(state)
            if moves and state == KazooState.SUSPENDED:
                return
            if state != KazooState.CONNECTED and not self.ending and not stopping:
                self.drops.append("client %s (%s) went %s at %.3f" % (name, hosts, state, time.time()))
        c.add_listener(listener)
        c.start(timeout=WAIT)
        c.stopping = stopping  # set by stop(): losing the connection is then expected
        self.clients.append(c)
        return c

    def stop(self, c):
        """Ends c's session on purpose."""
        c.stopping.append(True)
        c.stop()
        c.close()

    def close(self):
        self.ending = True
        for p in self.children:
            if p.poll() is None:
                p.kill()
            p.wait()
        for c in self.clients:
            if c.connected:
                try:
                    c.delete(self.root, recursive=True)
                except Exception:  # noqa: BLE001 - best effort cleanup
                    pass
                break
        for c in self.clients:
            try:
                c.stop()
                c.close()
            except Exception:  # noqa: BLE001 - already stopped
                pass
        for rl in self.relays:
            rl.cut()


# --- the scenarios -----------------------------------------------------------

def scenario_lock(r):
    """A holds, B's try fails and B's blocking acquire waits; B gets the lock
    when A lets go and reads what A wrote under it; then both increment a
    plain znode under the lock and no increment is lost."""
    a, b = r.a, r.b
    path, data = r.root + "/lock", r.root + "/data"
    a.create(data, b"0", makepath=True)
    la, lb = a.Lock(path, "a"), b.Lock(path, "b")
    must(la.acquire(timeout=WAIT), "A acquires the free lock")
    a.set(data, b"written by A under the lock")
    must(not lb.acquire(blocking=False), "B's non-blocking acquire fails while A holds the lock")
    holding = {"a": True}

    def b_acquire():
        got = lb.acquire(timeout=WAIT)
        return got, holding["a"]
    bg = Bg("B's acquire", b_acquire)
    wait_until(lambda: la.contenders() == ["a", "b"], "A to see contenders [a, b]")
    must(not bg.done.is_set(), "B's acquire waits while A holds the lock (it returned %r)" % (bg.result,))
    holding["a"] = False
    la.release()
    got, a_held = bg.wait()
    must(got, "B acquires the lock after A released it")
    must(not a_held, "B acquired the lock while A still held it")
    value = b.get(data)[0]
    must(value == b"written by A under the lock",
         "B, holding the lock after A, reads A's write made under it: got %r" % (value,))
    must(not la.acquire(blocking=False), "A's non-blocking acquire fails while B holds the lock")
    lb.release()

    b.set(data, b"0")
    rounds = 8
    inside = []
    overlaps = []

    def increments(c, lock, name):
        for _ in range(rounds):
            must(lock.acquire(timeout=WAIT), "%s acquires the lock for an increment" % name)
            try:
                if inside:
                    overlaps.append("%s entered while %s held the lock" % (name, inside[0]))
                inside.append(name)
                v = int(c.get(data)[0])
                c.set(data, str(v + 1).encode())
                inside.remove(name)
            finally:
                lock.release()
    ba = Bg("A's increments", increments, a, la, "A")
    bb = Bg("B's increments", increments, b, lb, "B")
    ba.wait(2 * WAIT)
    bb.wait(2 * WAIT)
    must(not overlaps, "mutual exclusion: " + "; ".join(overlaps))
    must(la.acquire(timeout=WAIT), "A acquires the lock to read the total")
    total = int(a.get(data)[0])
    la.release()
    must(total == 2 * rounds, "read-modify-write under the lock lost updates: %d, not %d" % (total, 2 * rounds))


def scenario_locking_queue(r):
    """B waits in get, A puts, B gets it; A gets the next entry while B holds
    the first; each sees the other's consume; an entry B releases goes to A."""
    a, b = r.a, r.b
    path = r.root + "/lq"
    qa, qb = a.LockingQueue(path), b.LockingQueue(path)
    a.ensure_path(path + "/entries")
    a.ensure_path(path + "/taken")
    b.sync(path + "/taken")
    bg = Bg("B's get on the empty queue", qb.get, WAIT)
    wait_until(lambda: blocked_in(bg, "queue.py", "_inner_get"), "B to wait in get")
    qa.put(b"x1", priority=50)
    got = bg.wait(WAIT + 5)
    must(got == b"x1", "B's waiting get returns A's put: got %r" % (got,))
    qa.put(b"x2", priority=60)
    got = qa.get(WAIT)
    must(got == b"x2", "A gets the next entry while B holds x1: got %r" % (got,))
    must(qb.consume(), "B consumes x1")
    wait_until(lambda: len(qa) == 1, "A to see x1 consumed (one entry left)")
    must(qa.consume(), "A consumes x2")
    wait_until(lambda: len(qb) == 0, "B to see x2 consumed (queue empty)")
    qb.put(b"x3")
    got = qa.get(WAIT)
    must(got == b"x3", "A gets B's put: got %r" % (got,))
    must(qa.release(), "A releases x3 unconsumed")
    got = qb.get(WAIT)
    must(got == b"x3", "B gets the entry A released: got %r" % (got,))
    must(qb.holds_lock(), "B holds the lock on x3")
    must(qb.consume(), "B consumes x3")
    wait_until(lambda: len(qa) == 0, "A to see the queue empty")


def scenario_barrier(r):
    """A sets the barrier, B waits on it, A's removal lets B through."""
    a, b = r.a, r.b
    path = r.root + "/barrier"
    ba, bb = a.Barrier(path), b.Barrier(path)
    a.ensure_path(r.root)
    ba.create()
    b.sync(path)  # B learns of the barrier from A, not from ZooKeeper
    removed = {"yes": False}

    def b_wait():
        return bb.wait(WAIT), removed["yes"]
    bg = Bg("B's barrier wait", b_wait)
    wait_until(lambda: blocked_in(bg, "barrier.py", "wait") or bg.done.is_set(), "B to wait on the barrier")
    must(not bg.done.is_set(), "B waits while the barrier is up (it returned %r)" % (bg.result,))
    removed["yes"] = True
    must(ba.remove(), "A removes the barrier")
    cleared, after = bg.wait(WAIT + 5)
    must(cleared, "B's wait returns True when A removes the barrier")
    must(after, "B passed the barrier before A removed it")
    must(bb.wait(WAIT), "B's second wait passes at once")
    # and the other way round
    bb.create()
    a.sync(path)
    ga = Bg("A's barrier wait", ba.wait, WAIT)
    wait_until(lambda: blocked_in(ga, "barrier.py", "wait") or ga.done.is_set(), "A to wait on B's barrier")
    must(not ga.done.is_set(), "A waits while B's barrier is up")
    must(bb.remove(), "B removes the barrier")
    must(ga.wait(WAIT + 5), "A's wait returns True when B removes the barrier")


def scenario_double_barrier(r):
    """A enters and waits for B; both pass once B enters; A waits in leave
    until B leaves; the barrier is empty afterwards."""
    a, b = r.a, r.b
    path = r.root + "/double"
    da, db = a.DoubleBarrier(path, 2, "a"), b.DoubleBarrier(path, 2, "b")
    flags = {"b entering": False, "b leaving": False}

    def enter(d):
        d.enter()
        return d.participating, dict(flags)
    ea = Bg("A's enter", enter, da)
    wait_until(lambda: blocked_in(ea, "barrier.py", "_inner_enter") or ea.done.is_set(),
               "A to wait in enter for B")
    must(not ea.done.is_set(), "A's enter waits for B (it returned %r)" % (ea.result,))
    flags["b entering"] = True
    eb = Bg("B's enter", enter, db)
    a_in, a_flags = ea.wait(WAIT + 5)
    b_in, _ = eb.wait(WAIT + 5)
    must(a_in and b_in, "both entered (A %r, B %r)" % (a_in, b_in))
    must(a_flags["b entering"], "A passed enter before B entered")

    def leave(d):
        d.leave()
        return dict(flags)
    la = Bg("A's leave", leave, da)
    wait_until(lambda: blocked_in(la, "barrier.py", "_inner_leave") or la.done.is_set(),
               "A to wait in leave for B")
    must(not la.done.is_set(), "A's leave waits for B")
    flags["b leaving"] = True
    lb = Bg("B's leave", leave, db)
    a_flags = la.wait(WAIT + 5)
    lb.wait(WAIT + 5)
    must(a_flags["b leaving"], "A left before B started to leave")
    a.sync(path)
    must(children(a, path) == [], "A sees the barrier empty after both left: %r" % (children(a, path),))
    b.sync(path)
    must(children(b, path) == [], "B sees the barrier empty after both left: %r" % (children(b, path),))


def scenario_election(r):
    """A leads; B contends and waits; B leads once A's term ends; A contends
    again and leads once B's session ends."""
    a, b = r.a, r.b
    path = r.root + "/election"
    state = {"leader": None}
    overlaps = []
    lock = threading.Lock()

    def lead(name, release):
        with lock:
            if state["leader"] is not None:
                overlaps.append("%s elected while %s led" % (name, state["leader"]))
            state["leader"] = name
        release.wait(2 * WAIT)
        with lock:
            if state["leader"] == name:
                state["leader"] = None

    ea, eb = a.Election(path, "a"), b.Election(path, "b")
    ra, rb = threading.Event(), threading.Event()
    ta = Bg("A's election", ea.run, lead, "a", ra)
    wait_until(lambda: state["leader"] == "a", "A to lead")
    tb = Bg("B's election", eb.run, lead, "b", rb)
    wait_until(lambda: ea.contenders() == ["a", "b"], "A to see contenders [a, b]")
    wait_until(lambda: eb.contenders() == ["a", "b"], "B to see contenders [a, b]")
    must(state["leader"] == "a", "A still leads while B contends (leader %r)" % (state["leader"],))
    ra.set()
    ta.wait()
    wait_until(lambda: state["leader"] == "b", "B to lead after A's term ended")

    ea2 = a.Election(path, "a2")
    ra2 = threading.Event()
    ta2 = Bg("A's second election", ea2.run, lead, "a2", ra2)
    wait_until(lambda: eb.contenders() == ["b", "a2"], "B to see contenders [b, a2]")
    with lock:
        state["leader"] = None  # B's term ends with its session
    r.stop(b)
    wait_until(lambda: state["leader"] == "a2", "A to lead after B's session ended")
    must(ea2.contenders() == ["a2"], "A sees itself the only contender: %r" % (ea2.contenders(),))
    rb.set()
    tb.done.wait(WAIT)  # B's run ends in an error: its client is closed
    ra2.set()
    ta2.wait()

    # A contender on B's member leads and its process dies (kill -9, no
    # closeSession): A leads once that session expires, neither much before
    # nor much after its timeout.
    cpath = r.root + "/crash"
    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--election-child", r.hosts_b, cpath],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    r.children.append(child)
    line = Bg("the contender process's report", child.stdout.readline).wait()
    m = re.match(r"leading (-?\d+) (0x[0-9a-f]+)", line or "")
    must(m, "the contender process leads (it said %r)" % (line,))
    negotiated, session = int(m.group(1)), m.group(2)
    must(negotiated > 0, "the contender process learned its session timeout")
    ea3 = a.Election(cpath, "a3")
    ra3 = threading.Event()
    ta3 = Bg("A's election after the crash", ea3.run, lead, "a3", ra3)
    wait_until(lambda: ea3.contenders() == ["c", "a3"], "A to see contenders [c, a3]")
    with lock:
        state["leader"] = None  # the contender's term ends with its process
    killed = time.monotonic()
    child.send_signal(signal.SIGKILL)
    wait_until(lambda: state["leader"] == "a3", "A to lead after the contender's process died (session %s, timeout %dms)"
               % (session, negotiated), timeout=max(WAIT, 4 * negotiated / 1000.0))
    took = time.monotonic() - killed
    r.notes.append("A led %.2fs after the contender's process was killed (session timeout %dms)" % (took, negotiated))
    must(took >= 0.5 * negotiated / 1000.0,
         "A led %.2fs after the contender's process died, before its session (%s, timeout %dms) could expire"
         % (took, session, negotiated))
    must(took <= 2.5 * negotiated / 1000.0,
         "A led %.2fs after the contender's process died: its session (%s, timeout %dms) expired late"
         % (took, session, negotiated))
    ra3.set()
    ta3.wait()
    must(not overlaps, "one leader at a time: " + "; ".join(overlaps))


def election_child(hosts, path):
    """A contender in its own process: leads, says so and its negotiated
    session timeout and session id, and waits to be killed. It exits by
    itself if its parent goes first (its stdin, a pipe from the parent,
    ends), so that an interrupted run leaves no contender behind."""
    def orphaned():
        sys.stdin.read()
        os._exit(1)
    threading.Thread(target=orphaned, daemon=True).start()
    negotiated = []

    class Grab(logging.Handler):
        def emit(self, record):
            m = re.search(r"negotiated session timeout: (\d+)", record.getMessage())
            if m:
                negotiated.append(int(m.group(1)))
    log = logging.getLogger("contender")
    log.setLevel(5)  # kazoo's BLATHER, where it logs the negotiated timeout
    log.addHandler(Grab())
    log.propagate = False
    c = KazooClient(hosts=hosts, timeout=CRASH_SESSION, logger=log)
    c.start(timeout=WAIT)

    def lead():
        print("leading %d 0x%x" % (negotiated[-1] if negotiated else -1, c.client_id[0]), flush=True)
        threading.Event().wait()
    c.Election(path, "c").run(lead)


def scenario_counter(r):
    """A and B increment one counter at once; the total is exact and every
    increment has its own post value."""
    a, b = r.a, r.b
    path = r.root + "/counter"
    ca, cb = a.Counter(path), b.Counter(path)
    n = 12
    posts = []

    def incr(c):
        for _ in range(n):
            c += 1
            posts.append(c.post_value)
    ba, bb = Bg("A's increments", incr, ca), Bg("B's increments", incr, cb)
    ba.wait(2 * WAIT)
    bb.wait(2 * WAIT)
    a.sync(path)
    must(ca.value == 2 * n, "A reads the total %r after sync, not %d" % (ca.value, 2 * n))
    b.sync(path)
    must(cb.value == 2 * n, "B reads the total %r after sync, not %d" % (cb.value, 2 * n))
    must(sorted(posts) == list(range(1, 2 * n + 1)),
         "each increment has its own post value: %r" % (sorted(posts),))
    cb -= 5
    a.sync(path)
    must(ca.value == 2 * n - 5, "A reads B's decrement after sync: %r" % (ca.value,))


def scenario_party(r):
    """Each sees the other join and leave; B's party member goes with its
    session."""
    a, b = r.a, r.b
    path = r.root + "/party"
    pa, pb = a.Party(path, "a"), b.Party(path, "b")
    pa.join()
    wait_until(lambda: sorted(pb) == ["a"], "B to see A in the party")
    pb.join()
    wait_until(lambda: sorted(pa) == ["a", "b"], "A to see A and B in the party")
    must(len(pa) == 2, "A counts two members")
    pa.leave()
    wait_until(lambda: sorted(pb) == ["b"], "B to see A leave")
    spath = r.root + "/shallow"
    sa, sb = a.ShallowParty(spath, "a"), b.ShallowParty(spath, "b")
    sb.join()
    wait_until(lambda: sorted(sa) == ["b"], "A to see B in the shallow party")
    sa.join()
    wait_until(lambda: sorted(sb) == ["a", "b"], "B to see A and B in the shallow party")
    r.stop(b)
    wait_until(lambda: sorted(sa) == ["a"], "A to see B's member go with B's session")
    wait_until(lambda: sorted(pa) == [], "A to see B's party member go with B's session")


def scenario_queue(r):
    """B takes A's puts in priority and FIFO order; then both take from one
    queue at once and every entry is taken exactly once."""
    a, b = r.a, r.b
    path = r.root + "/queue"
    qa, qb = a.Queue(path), b.Queue(path)
    items = [("i%02d" % i).encode() for i in range(8)]
    for it in items:
        qa.put(it)
    qa.put(b"urgent", priority=10)
    b.sync(path)  # B learns of the puts from A
    got = []

    def take_one():
        v = qb.get()
        if v is not None:
            got.append(v)
        return len(got) == 9
    wait_until(take_one, "B to take 9 entries")
    must(got == [b"urgent"] + items, "B takes entries by priority, then in order: %r" % (got,))
    must(qb.get() is None, "B finds the queue empty")
    wait_until(lambda: len(qa) == 0, "A to see the queue empty")

    n = 24
    for i in range(n):
        qa.put(("p%02d" % i).encode())
    b.sync(path)
    taken = {"A": [], "B": []}
    total = lambda: len(taken["A"]) + len(taken["B"])  # noqa: E731

    def take(q, name):
        deadline = time.monotonic() + 2 * WAIT
        while total() < n:
            must(time.monotonic() < deadline, "%s: queue not drained in time (%d taken)" % (name, total()))
            v = q.get()
            if v is not None:
                taken[name].append(v)
            else:
                time.sleep(0.01)  # polling an empty-looking queue; the loop ends on a count
    ta, tb = Bg("A's takes", take, qa, "A"), Bg("B's takes", take, qb, "B")
    ta.wait(2 * WAIT + 5)
    tb.wait(2 * WAIT + 5)
    everything = sorted(taken["A"] + taken["B"])
    must(everything == [("p%02d" % i).encode() for i in range(n)],
         "every entry taken exactly once: A %r, B %r" % (taken["A"], taken["B"]))
    for name in ("A", "B"):
        must(taken[name] == sorted(taken[name]), "%s takes in order: %r" % (name, taken[name]))


def scenario_data_watch(r):
    """B's DataWatch sees every change A makes, in order, and A's sees B's;
    after a burst the watch ends on the last value with versions rising."""
    a, b = r.a, r.b

    def follow(watcher, writer, path, n):
        seen = []
        watcher.DataWatch(path)(lambda data, stat: seen.append((data, stat.version if stat else None)))
        wait_until(lambda: seen == [(None, None)], "the watch's first call (no node)")
        writer.create(path, b"v0", makepath=True)
        wait_until(lambda: seen[-1] == (b"v0", 0), "the watch to see the create")
        for i in range(1, n):
            writer.set(path, ("v%d" % i).encode())
            wait_until(lambda: seen[-1][0] == ("v%d" % i).encode(), "the watch to see v%d" % i)
        writer.delete(path)
        wait_until(lambda: seen[-1] == (None, None), "the watch to see the delete")
        want = [(None, None)] + [(("v%d" % i).encode(), i) for i in range(n)] + [(None, None)]
        must(seen == want, "the watch saw every change in order: %r" % (seen,))
    follow(b, a, r.root + "/ab", 8)
    follow(a, b, r.root + "/ba", 4)

    path = r.root + "/burst"
    a.create(path, b"b0", makepath=True)
    b.sync(path)
    seen = []
    b.DataWatch(path)(lambda data, stat: seen.append((data, stat.version if stat else None)))
    n = 30
    for i in range(1, n + 1):
        a.set(path, ("b%d" % i).encode())
    wait_until(lambda: seen and seen[-1] == (("b%d" % n).encode(), n), "B's watch to end on A's last write")
    versions = [v for _, v in seen]
    must(versions == sorted(set(versions)), "B's watch saw versions rising: %r" % (versions,))
    must(all(d == ("b%d" % v).encode() for d, v in seen), "data matches versions: %r" % (seen,))

    # A session moves: C, reaching the members through relays, loses its
    # connection while A writes; it reconnects to another member with the
    # same session and its ephemeral node, and its watch hears what it missed.
    relays = [Relay(m) for m in members(r.hosts_b, r.hosts_a)]
    r.relays += relays
    c = r.client("C", ",".join(rl.address for rl in relays), moves=True)
    sid = c.client_id[0]
    mpath, eph = r.root + "/moved", r.root + "/moved-eph"
    a.create(mpath, b"m0")
    c.sync(mpath)
    c.create(eph, b"c", ephemeral=True)
    cseen = []
    c.DataWatch(mpath)(lambda data, stat: cseen.append(data))
    wait_until(lambda: cseen == [b"m0"], "C's watch to see m0")
    on = [rl for rl in relays if rl.carrying()]
    must(len(on) == 1, "C's connection goes through one relay: %d do" % len(on))
    cut = time.monotonic()
    on[0].cut()
    a.set(mpath, b"m1")
    wait_until(lambda: KazooState.SUSPENDED in c.states, "C to notice its connection cut")
    wait_until(lambda: c.connected and c.states[-1] == KazooState.CONNECTED, "C to reconnect to another member")
    r.notes.append("C moved to another member %.2fs after its connection was cut" % (time.monotonic() - cut,))
    must(c.client_id[0] == sid, "C keeps its session (0x%x, now 0x%x)" % (sid, c.client_id[0]))
    must(KazooState.LOST not in c.states, "C's session survives the move: states %r" % (c.states,))
    wait_until(lambda: cseen[-1] == b"m1", "C's watch to hear A's write made while C was away")
    must(cseen == [b"m0", b"m1"], "C's watch saw m0, m1: %r" % (cseen,))
    st = a.exists(eph)
    must(st is not None and st.ephemeralOwner == sid, "A sees C's ephemeral node still owned by C: %r" % (st,))
    a.set(mpath, b"m2")
    wait_until(lambda: cseen[-1] == b"m2", "C's watch, re-armed on its new member, to hear m2")
    c.set(mpath, b"m3")
    wait_until(lambda: a.get(mpath)[0] == b"m3", "A to read C's write through the new member")


def scenario_children_watch(r):
    """B's ChildrenWatch sees every child A adds and removes, in order,
    including an ephemeral child that goes with A's session."""
    a, b = r.a, r.b
    path = r.root + "/kids"
    a.ensure_path(path)
    b.sync(path)
    seen = []
    b.ChildrenWatch(path)(lambda kids: seen.append(sorted(kids)))
    wait_until(lambda: seen == [[]], "B's first call (no children)")
    want = [[]]
    names = ["c%d" % i for i in range(5)]
    for i, name in enumerate(names):
        a.create(path + "/" + name)
        want.append(names[:i + 1])
        wait_until(lambda: seen[-1] == names[:i + 1], "B to see %s created" % name)
    for i, name in enumerate(names):
        a.delete(path + "/" + name)
        want.append(names[i + 1:])
        wait_until(lambda: seen[-1] == names[i + 1:], "B to see %s deleted" % name)
    must(seen == want, "B saw every change in order: %r" % (seen,))

    bpath = r.root + "/burst"
    a.ensure_path(bpath)
    b.sync(bpath)
    burst = []
    b.ChildrenWatch(bpath)(lambda kids: burst.append(set(kids)))
    n = 20
    for i in range(n):
        a.create("%s/k%02d" % (bpath, i))
    wait_until(lambda: burst and len(burst[-1]) == n, "B to see all %d children" % n)
    for before, after in zip(burst, burst[1:]):
        must(before <= after, "B's views only grow during the burst: %r then %r" % (sorted(before), sorted(after)))

    a.create(path + "/eph", ephemeral=True)
    wait_until(lambda: seen[-1] == ["eph"], "B to see A's ephemeral child")
    r.stop(a)
    wait_until(lambda: seen[-1] == [], "B to see A's ephemeral child go with A's session")


SCENARIOS = {
    "Lock": scenario_lock,
    "LockingQueue": scenario_locking_queue,
    "Barrier": scenario_barrier,
    "DoubleBarrier": scenario_double_barrier,
    "Election": scenario_election,
    "Counter": scenario_counter,
    "Party": scenario_party,
    "Queue": scenario_queue,
    "DataWatch": scenario_data_watch,
    "ChildrenWatch": scenario_children_watch,
}


def where(tb):
    """The innermost line of this file in a traceback."""
    here = [f for f in traceback.extract_tb(tb) if f.filename.endswith("kazoo_recipes.py") and
            f.name not in ("must", "wait_until", "wait")]
    return " [at line %d in %s]" % (here[-1].lineno, here[-1].name) if here else ""


def one_run(recipe, hosts_a, hosts_b, notes):
    """Returns None if the run passed, else why it failed; adds the run's
    notes to notes."""
    run = None
    try:
        run = Run(recipe, hosts_a, hosts_b)
        SCENARIOS[recipe](run)
        if run.drops:
            return "connection trouble: " + "; ".join(run.drops)
        return None
    except Fail as e:
        why = str(e) + where(e.__traceback__)
    except Exception as e:  # noqa: BLE001 - any error fails the run
        why = "%r%s" % (e, where(e.__traceback__))
    finally:
        if run is not None:
            notes.extend(run.notes)
            run.close()
    if run is not None and run.drops:
        why += " (connection trouble: " + "; ".join(run.drops) + ")"
    return why


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--election-child":
        election_child(sys.argv[2], sys.argv[3])
        return
    p = argparse.ArgumentParser()
    p.add_argument("recipe", choices=sorted(SCENARIOS))
    p.add_argument("hosts_a")
    p.add_argument("hosts_b")
    p.add_argument("--runs", type=int, default=1)
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    passes = 0
    for i in range(1, args.runs + 1):
        start = time.monotonic()
        outcome = {}
        notes = []
        t = threading.Thread(target=lambda: outcome.setdefault("why", one_run(args.recipe, args.hosts_a, args.hosts_b, notes)),
                             name="run-%d" % i, daemon=True)
        t.start()
        t.join(RUN_LIMIT)
        took = time.monotonic() - start
        if t.is_alive():
            print("FAIL run %d (%.1fs): %s hung for %ss; giving up" % (i, took, args.recipe, RUN_LIMIT), flush=True)
            print("RESULT %d/%d" % (passes, args.runs), flush=True)
            os._exit(1)
        for n in notes:
            print("NOTE run %d: %s" % (i, n), flush=True)
        if outcome["why"] is None:
            passes += 1
        else:
            print("FAIL run %d (%.1fs): %s" % (i, took, outcome["why"]), flush=True)
    print("RESULT %d/%d" % (passes, args.runs), flush=True)
    sys.exit(0 if passes == args.runs else 1)


if __name__ == "__main__":
    main()
