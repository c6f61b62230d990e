#!/usr/bin/python3
"""kazoo_check drives python-kazoo's recipes against a server and checks
them: Lock, Election, Counter, DataWatch and ChildrenWatch. It prints one
"ok NAME" or "FAIL NAME: why" line per check and exits with the number of
failures.

    /usr/bin/python3 kazoo_check.py 127.0.0.1:2181

integration/clients_test.go (build tag "clients") runs it against zkraft and,
when ZKRAFT_REALZK names one, against a real ZooKeeper.
"""
import sys
import threading
import time
import uuid

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError

server = sys.argv[1]
root = "/kazoo-check-" + uuid.uuid4().hex[:12]
failures = 0


def client():
    c = KazooClient(hosts=server, timeout=10)
    c.start(timeout=10)
    return c


def check(name, fn):
    global failures
    try:
        fn()
        print("ok " + name, flush=True)
    except Exception as e:  # noqa: BLE001 - report every failure the same way
        failures += 1
        print("FAIL %s: %r" % (name, e), flush=True)


def wait_for(cond, what, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def lock_excludes():
    clients = [client() for _ in range(4)]
    holding = []
    overlap = []
    acquired = []

    def worker(c, i):
        lock = c.Lock(root + "/lock", "w%d" % i)
        for _ in range(10):
            with lock:
                if holding:
                    overlap.append(i)
                holding.append(i)
                acquired.append(i)
                time.sleep(0.001)
                holding.pop()

    threads = [threading.Thread(target=worker, args=(c, i)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for c in clients:
        c.stop()
        c.close()
    assert not overlap, "two holders at once: %r" % overlap
    assert len(acquired) == 40, "acquisitions: %d" % len(acquired)


def election_elects_one():
    clients = [client() for _ in range(3)]
    leaders = []
    stop = threading.Event()

    def campaign(c, i):
        def lead():
            leaders.append(i)
            stop.wait(10)
        try:
            c.Election(root + "/election", "e%d" % i).run(lead)
        except ConnectionClosedError:
            pass  # this contender's client was stopped on purpose

    threads = [threading.Thread(target=campaign, args=(c, i), daemon=True) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    wait_for(lambda: len(leaders) >= 1, "a leader")
    time.sleep(0.3)
    assert len(leaders) == 1, "leaders at once: %r" % leaders
    first = leaders[0]
    clients[first].stop()  # the leader's session ends: someone else leads
    wait_for(lambda: len(leaders) >= 2, "a second leader")
    stop.set()
    for i, c in enumerate(clients):
        if i != first:
            c.stop()
        c.close()


def counter_counts():
    a, b = client(), client()
    ca, cb = a.Counter(root + "/counter"), b.Counter(root + "/counter")

    def bump(counter):
        for _ in range(50):
            counter += 1

    threads = [threading.Thread(target=bump, args=(c,)) for c in (ca, cb)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert a.Counter(root + "/counter").value == 100, "counter %r" % a.Counter(root + "/counter").value
    for c in (a, b):
        c.stop()
        c.close()


def data_watch_follows():
    c = client()
    c.ensure_path(root + "/data")
    seen = []
    c.DataWatch(root + "/data", lambda data, stat: seen.append(data))
    wait_for(lambda: len(seen) >= 1, "the first call")
    c.set(root + "/data", b"v1")
    c.set(root + "/data", b"v2")
    wait_for(lambda: seen[-1] == b"v2", "v2")
    c.delete(root + "/data")
    wait_for(lambda: seen[-1] is None, "the delete")
    c.stop()
    c.close()


def children_watch_follows():
    c = client()
    c.ensure_path(root + "/kids")
    seen = []
    c.ChildrenWatch(root + "/kids", lambda kids: seen.append(sorted(kids)))
    wait_for(lambda: seen == [[]], "the first call")
    c.create(root + "/kids/a")
    wait_for(lambda: seen[-1] == ["a"], "a")
    c.create(root + "/kids/b", ephemeral=True)
    wait_for(lambda: seen[-1] == ["a", "b"], "a, b")
    c.delete(root + "/kids/a")
    wait_for(lambda: seen[-1] == ["b"], "b")
    c.stop()
    c.close()


main = client()
main.ensure_path(root)
check("kazoo Lock excludes across 4 sessions x 10 acquisitions", lock_excludes)
check("kazoo Election elects one leader and fails over", election_elects_one)
check("kazoo Counter counts every increment from 2 sessions", counter_counts)
check("kazoo DataWatch follows sets and the delete", data_watch_follows)
check("kazoo ChildrenWatch follows children", children_watch_follows)
main.delete(root, recursive=True)
main.stop()
main.close()
print("PASS" if failures == 0 else "FAILURES %d" % failures)
sys.exit(failures)
