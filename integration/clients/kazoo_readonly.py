#!/usr/bin/python3
"""kazoo_readonly checks ZooKeeper's read-only mode with python-kazoo, as its
users meet it: a client that allows read-only (read_only=True) and starts
while the ensemble has lost its quorum connects, read-only, to the member
left, and moves to a read-write session by itself once the quorum returns.
(A session created read-write is not resumed read-only: ZooKeeper 3.8
refuses a global session's reconnection in read-only mode, and so does
zkraft; such a client waits for the quorum.)

    /usr/bin/python3 kazoo_readonly.py HOSTS

It talks to its driver (integration/clients_readonly_test.go, build tag
"clients") line by line: it writes /ro-check through a read-write session
and prints "READY", then waits for "CUT" on stdin (the driver has killed
all members but one), starts a client with read_only=True, checks that it
becomes read-only (KeeperState.CONNECTED_RO), that reads are served and
that a write fails with NotReadOnlyCallError, prints "READONLY", waits for
"BACK" (the members run again), checks that the client reconnects
read-write by itself and writes, and prints "PASS". Any failure prints
"FAIL: why" and exits non-zero; every wait has a deadline.
"""
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NotReadOnlyCallError
from kazoo.protocol.states import KeeperState

WAIT = 60.0


def fail(why):
    print("FAIL: " + why, flush=True)
    sys.exit(1)


def wait_for(what, cond):
    deadline = time.monotonic() + WAIT
    while not cond():
        if time.monotonic() > deadline:
            fail("timed out waiting for " + what)
        time.sleep(0.05)  # polling the client's state


def expect_line(word):
    line = sys.stdin.readline().strip()
    if line != word:
        fail("expected %r from the driver, got %r" % (word, line))


def main():
    hosts = sys.argv[1]
    rw = KazooClient(hosts=hosts, timeout=10.0)
    rw.start(timeout=WAIT)
    rw.ensure_path("/ro-check")
    rw.set("/ro-check", b"before")
    rw.stop()
    rw.close()
    print("READY", flush=True)

    expect_line("CUT")
    states = []
    lock = threading.Lock()

    def listener(state):
        with lock:
            states.append(state)

    zk = KazooClient(hosts=hosts, read_only=True, timeout=10.0)
    zk.add_listener(listener)
    zk.start(timeout=WAIT)
    wait_for("a read-only session", lambda: zk.client_state == KeeperState.CONNECTED_RO)
    data, _ = zk.get("/ro-check")
    if data != b"before":
        fail("read-only read returned %r" % data)
    try:
        zk.create("/ro-check/x", b"")
        fail("a write on a read-only session succeeded")
    except NotReadOnlyCallError:
        pass
    print("READONLY", flush=True)

    expect_line("BACK")
    wait_for("a read-write session", lambda: zk.client_state == KeeperState.CONNECTED)
    zk.set("/ro-check", b"after")
    data, _ = zk.get("/ro-check")
    if data != b"after":
        fail("read after the quorum returned %r" % data)
    zk.delete("/ro-check")
    zk.stop()
    zk.close()
    with lock:
        seen = ", ".join(str(s) for s in states)
    print("states: " + seen, flush=True)
    print("PASS", flush=True)


if __name__ == "__main__":
    main()
