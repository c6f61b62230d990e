#!/usr/bin/python3
"""kazoo_leaderloss measures what the last member of a three-member ensemble
does for its clients when the other two die at once (kill -9 of the leader
and a follower): how long an open kazoo session's reads are still answered
and when its connection closes, from when new sessions are refused (the
connection closed at once, so that the client tries another member) rather
than left unanswered, and from when read-only sessions are served
(readonlymode.enabled / -read-only-mode).

    /usr/bin/python3 kazoo_leaderloss.py LAST_HOST:PORT PID PID

The same run measures ZooKeeper and zkraft alike (integration/scripts/leaderloss
starts both and calls this). It prints one line per finding, then a JSON
line with the times in seconds from the kill; a time never reached within
the run's 15 s is null.
"""
import json
import os
import signal
import socket
import struct
import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.protocol.states import KazooState

RUN = 15.0
PROBE_WAIT = 0.3


def connect_request(read_only):
    """A ConnectRequest frame: protocol 0, no zxid seen, 10 s, a new session."""
    body = struct.pack(">iqiqi16s?", 0, 0, 10000, 0, 16, b"\0" * 16, read_only)
    return struct.pack(">i", len(body)) + body


def probe(host, port, read_only):
    """Opens a new session on the member: 'served' (answered; for read-only,
    answered read-only), 'refused' (closed without an answer), 'silent' (no
    answer within PROBE_WAIT) or 'down' (the connection itself refused)."""
    try:
        s = socket.create_connection((host, port), timeout=PROBE_WAIT)
    except OSError:
        return "down"
    try:
        s.settimeout(PROBE_WAIT)
        s.sendall(connect_request(read_only))
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(4096)
            if not chunk:
                return "refused"
            buf += chunk
        n = struct.unpack(">i", buf[:4])[0]
        body = buf[4:4 + n]
        if len(body) < 20:
            return "refused"
        _, timeout, session, plen = struct.unpack(">iiqi", body[:20])
        ro = len(body) > 20 + plen and body[20 + plen] != 0
        if timeout <= 0 or session == 0:
            return "refused"
        if read_only and not ro:
            return "served rw"
        return "served"
    except socket.timeout:
        return "silent"
    except OSError:
        return "refused"
    finally:
        s.close()


def main():
    last = sys.argv[1]
    host, port = last.rsplit(":", 1)
    port = int(port)
    pids = [int(p) for p in sys.argv[2:]]

    zk = KazooClient(hosts=last, timeout=10.0)
    zk.start(timeout=30)
    states = []
    zk.add_listener(lambda st: states.append((time.monotonic(), st)))
    zk.exists("/")

    found = {"open_read_last_ok": None, "open_closed": None, "new_refused": None,
             "new_silent_until": None, "read_only_served": None}
    stop = threading.Event()

    t0 = time.monotonic()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)

    def reads():
        while not stop.is_set():
            try:
                zk.exists_async("/").get(timeout=0.2)
                found["open_read_last_ok"] = time.monotonic() - t0
            except Exception:
                pass
            time.sleep(0.02)  # pacing the reads, not synchronisation

    reader = threading.Thread(target=reads, daemon=True)
    reader.start()
    while time.monotonic() - t0 < RUN:
        now = time.monotonic() - t0
        if found["open_closed"] is None:
            for at, st in list(states):
                if st in (KazooState.SUSPENDED, KazooState.LOST):
                    found["open_closed"] = at - t0
                    print("open session: connection closed at %.2f s" % found["open_closed"], flush=True)
                    break
        if found["new_refused"] is None:
            r = probe(host, port, False)
            if r == "refused":
                found["new_refused"] = now
                print("new session: refused at %.2f s" % now, flush=True)
            elif r == "silent":
                found["new_silent_until"] = now
        if found["read_only_served"] is None:
            if probe(host, port, True) == "served":
                found["read_only_served"] = now
                print("read-only session: served at %.2f s" % now, flush=True)
        if all(found[k] is not None for k in ("open_closed", "new_refused", "read_only_served")):
            break
        time.sleep(0.05)  # the probes' pace
    stop.set()
    reader.join()
    if found["read_only_served"] is not None:
        ro = KazooClient(hosts=last, read_only=True, timeout=10.0)
        ro.start(timeout=10)
        ro.exists("/")
        found["read_only_kazoo"] = ro.client_state
        ro.stop()
        ro.close()
    try:
        zk.stop()
        zk.close()
    except Exception:
        pass
    if found["open_read_last_ok"] is not None:
        print("open session: reads answered until %.2f s" % found["open_read_last_ok"], flush=True)
    print(json.dumps(found), flush=True)


if __name__ == "__main__":
    main()
