// CuratorRecipes runs one of Curator's (5.4) recipes with two clients that
// must see each other's work: client A connected to CONNECT_A and client B
// to CONNECT_B (a connect string each: one member of an ensemble, to pin the
// session to it, or the whole list). Each run uses fresh sessions and a
// fresh znode path; every wait has a deadline, so a hang is a failure.
//
//   javac -cp "$CP" -d DIR CuratorRecipes.java
//   java -cp "DIR:$CP" CuratorRecipes RECIPE CONNECT_A CONNECT_B RUNS
//
// RECIPE is one of InterProcessMutex, InterProcessReadWriteLock,
// InterProcessSemaphoreV2, DistributedBarrier, DistributedDoubleBarrier,
// LeaderLatch, LeaderSelector, DistributedQueue, DistributedAtomicLong,
// CuratorCache, PersistentNode. It prints one "FAIL run I: why" line per
// failed run, "NOTE run I: ..." lines for measurements (how soon a dead
// contender's session expired, how soon a session moved), then "RESULT
// PASSES/RUNS", and exits non-zero if any run failed. A connection that is
// suspended or lost while a run is under way fails the run too, except where
// a scenario cuts one on purpose.
//
// integration/clients_cluster_test.go (build tag "clients") runs every recipe
// against a three-member zkraft cluster and, when ZKRAFT_REALZK_CLUSTER names
// one, a real ZooKeeper ensemble, with the clients pinned to different members.
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.nodes.PersistentNode;
import org.apache.curator.framework.recipes.queue.DistributedQueue;
import org.apache.curator.framework.recipes.queue.QueueBuilder;
import org.apache.curator.framework.recipes.queue.QueueConsumer;
import org.apache.curator.framework.recipes.queue.QueueSerializer;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

public class CuratorRecipes {
    static final long WAIT = 30;        // seconds any one thing may take to happen
    static final long RUN_LIMIT = 180;  // seconds a whole run may take before it counts as hung
    static final int CRASH_SESSION_MS = 4000; // the session timeout a crashing contender asks for
    static final String LOCKS = "org.apache.curator.framework.recipes.locks.";
    static final String BARRIERS = "org.apache.curator.framework.recipes.barriers.";

    static class Fail extends RuntimeException {
        Fail(String what) { super(what); }
        Fail(String what, Throwable cause) { super(what + ": " + cause, cause); }
    }

    static void must(boolean cond, String what) {
        if (!cond) throw new Fail(what);
    }

    interface Cond { boolean holds() throws Exception; }

    interface Body<T> { T call() throws Exception; }

    interface Scenario { void run(Run r) throws Exception; }

    /** Polls cond until it holds; fails after WAIT seconds. */
    static void waitUntil(Cond cond, String what) throws InterruptedException {
        waitUntil(cond, what, WAIT);
    }

    static void waitUntil(Cond cond, String what, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        Exception last = null;
        while (true) {
            try {
                if (cond.holds()) return;
                last = null;
            } catch (Fail f) {
                throw f;
            } catch (Exception e) {
                last = e;
            }
            if (System.nanoTime() >= deadline) {
                throw new Fail("timed out after " + seconds + "s waiting for " + what + (last == null ? "" : " (last error " + last + ")"));
            }
            Thread.sleep(10);
        }
    }

    /** A thread of its own for one client's lock calls: Curator's locks
     *  belong to the thread that acquired them, which must release them. */
    static class Actor {
        final BlockingQueue<Runnable> jobs = new LinkedBlockingQueue<>();
        final Thread thread;

        Actor(String name) {
            thread = new Thread(() -> {
                try {
                    while (true) jobs.take().run();
                } catch (InterruptedException e) {
                    // the run is over
                }
            }, name);
            thread.setDaemon(true);
            thread.start();
        }

        /** Runs body on the actor's thread and waits for it. */
        <T> T call(String what, Body<T> body) throws InterruptedException {
            return new Bg<>(this, what, body).await();
        }

        void stop() { thread.interrupt(); }
    }

    /** Runs body in a daemon thread (or on an actor's) and keeps its result. */
    static class Bg<T> {
        final String what;
        final Thread thread;
        final CountDownLatch done = new CountDownLatch(1);
        volatile T result;
        volatile Throwable error;

        Bg(String what, Body<T> body) {
            this(null, what, body);
        }

        Bg(Actor actor, String what, Body<T> body) {
            this.what = what;
            Runnable job = () -> {
                try {
                    result = body.call();
                } catch (Throwable t) {
                    error = t;
                } finally {
                    done.countDown();
                }
            };
            if (actor != null) {
                thread = actor.thread;
                actor.jobs.add(job);
            } else {
                thread = new Thread(job, what);
                thread.setDaemon(true);
                thread.start();
            }
        }

        boolean isDone() { return done.getCount() == 0; }

        T await(long seconds) throws InterruptedException {
            if (!done.await(seconds, TimeUnit.SECONDS)) throw new Fail(what + " did not return within " + seconds + "s");
            if (error != null) throw new Fail(what + " threw", error);
            return result;
        }

        T await() throws InterruptedException { return await(WAIT + 5); }
    }

    /** Whether t is parked in a wait called straight from cls.method (not in
     *  a request to the server, which also waits). */
    static boolean blockedIn(Thread t, String cls, String method) {
        Thread.State st = t.getState();
        if (st != Thread.State.WAITING && st != Thread.State.TIMED_WAITING) return false;
        for (StackTraceElement e : t.getStackTrace()) {
            String c = e.getClassName();
            if (c.startsWith("java.") || c.startsWith("jdk.") || c.startsWith("sun.")) continue;
            return c.equals(cls) && e.getMethodName().equals(method);
        }
        return false;
    }

    static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    static String s(byte[] b) { return b == null ? null : new String(b, StandardCharsets.UTF_8); }

    /** Brings c's server up to date with the leader for path (sync). */
    static void sync(CuratorFramework c, String path) throws Exception {
        CountDownLatch synced = new CountDownLatch(1);
        c.sync().inBackground((cl, ev) -> synced.countDown()).forPath(path);
        must(synced.await(WAIT, TimeUnit.SECONDS), "sync of " + path + " returns");
    }

    /** The children body lists, or none if their parent is gone (Curator's
     *  recipes make their parents containers, which ZooKeeper removes once
     *  they are empty). */
    static List<String> orEmpty(Body<List<String>> body) throws Exception {
        try {
            return body.call();
        } catch (KeeperException.NoNodeException e) {
            return List.of();
        }
    }

    static String dataOrNull(CuratorFramework c, String path) throws Exception {
        try {
            return s(c.getData().forPath(path));
        } catch (KeeperException.NoNodeException e) {
            return null;
        }
    }

    /** A TCP relay to one member, cut like the network of a host that died:
     *  its connections close and it accepts no more, so the client behind it
     *  can neither close its session nor reconnect. */
    static class Relay {
        final ServerSocket listener;
        final List<Socket> sockets = Collections.synchronizedList(new ArrayList<>());

        Relay(String hostPort) throws IOException {
            String host = hostPort.substring(0, hostPort.lastIndexOf(':'));
            int port = Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
            listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread t = new Thread(() -> {
                while (true) {
                    try {
                        Socket in = listener.accept();
                        Socket out = new Socket(host, port);
                        sockets.add(in);
                        sockets.add(out);
                        pump(in, out);
                        pump(out, in);
                    } catch (IOException e) {
                        return; // cut
                    }
                }
            }, "relay to " + hostPort);
            t.setDaemon(true);
            t.start();
        }

        static void pump(Socket from, Socket to) {
            Thread t = new Thread(() -> {
                byte[] buf = new byte[65536];
                try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                    for (int n; (n = in.read(buf)) >= 0; ) out.write(buf, 0, n);
                } catch (IOException e) {
                    // cut or closed
                } finally {
                    try { from.close(); to.close(); } catch (IOException e) { /* closing */ }
                }
            }, "relay pump");
            t.setDaemon(true);
            t.start();
        }

        String address() { return "127.0.0.1:" + listener.getLocalPort(); }

        /** Whether a connection through this relay is open. */
        boolean carrying() {
            synchronized (sockets) {
                for (Socket s : sockets) if (!s.isClosed()) return true;
            }
            return false;
        }

        void cut() throws IOException {
            listener.close();
            synchronized (sockets) {
                for (Socket s : sockets) s.close();
            }
        }
    }

    /** One run: two fresh sessions and a fresh root znode. */
    static class Run implements AutoCloseable {
        final String root;
        final List<String> drops = Collections.synchronizedList(new ArrayList<>());
        final List<CuratorFramework> clients = new ArrayList<>();
        final Set<CuratorFramework> stopped = ConcurrentHashMap.newKeySet();
        volatile boolean ending;
        final CuratorFramework a, b;
        final Actor actorA = new Actor("actor A"), actorB = new Actor("actor B");
        final String connectA, connectB;
        final List<String> notes = Collections.synchronizedList(new ArrayList<>()); // printed as NOTE lines
        final List<Relay> relays = new ArrayList<>();
        final Map<CuratorFramework, List<ConnectionState>> states = new ConcurrentHashMap<>();

        Run(String recipe, String connectA, String connectB) throws Exception {
            root = "/curator-recipes-" + recipe.toLowerCase() + "-" + UUID.randomUUID().toString().substring(0, 12);
            this.connectA = connectA;
            this.connectB = connectB;
            CuratorFramework ca = null, cb = null;
            try {
                ca = client("A", connectA);
                cb = client("B", connectB);
            } catch (Exception e) {
                close();
                throw e;
            }
            a = ca;
            b = cb;
        }

        CuratorFramework client(String name, String connect) throws Exception {
            return client(name, connect, 15000);
        }

        CuratorFramework client(String name, String connect, int sessionMs) throws Exception {
            return client(name, connect, sessionMs, false);
        }

        /** A started client; with moves, it may lose its connection (and
         *  reconnect) without failing the run, but not its session. */
        CuratorFramework client(String name, String connect, int sessionMs, boolean moves) throws Exception {
            CuratorFramework c = CuratorFrameworkFactory.builder().connectString(connect)
                .sessionTimeoutMs(sessionMs).connectionTimeoutMs(15000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10, 2000)).build();
            clients.add(c);
            List<ConnectionState> seen = Collections.synchronizedList(new ArrayList<>());
            states.put(c, seen);
            c.getConnectionStateListenable().addListener((cl, state) -> {
                seen.add(state);
                if (moves && (state == ConnectionState.SUSPENDED || state == ConnectionState.RECONNECTED)) return;
                if (state != ConnectionState.CONNECTED && !ending && !stopped.contains(cl)) {
                    drops.add("client " + name + " (" + connect + ") went " + state + " at " + System.currentTimeMillis());
                }
            });
            c.start();
            must(c.blockUntilConnected((int) WAIT, TimeUnit.SECONDS), "client " + name + " connects to " + connect);
            return c;
        }

        /** Ends c's session on purpose. */
        void stop(CuratorFramework c) {
            stopped.add(c);
            c.close();
        }

        @Override
        public void close() {
            ending = true;
            for (CuratorFramework c : clients) {
                if (stopped.contains(c)) continue;
                try {
                    c.delete().deletingChildrenIfNeeded().forPath(root);
                } catch (Exception e) {
                    // best effort cleanup
                }
                break;
            }
            for (CuratorFramework c : clients) c.close();
            for (Relay rl : relays) {
                try {
                    rl.cut();
                } catch (IOException e) {
                    // closing
                }
            }
            actorA.stop();
            actorB.stop();
        }
    }

    // --- the scenarios --------------------------------------------------------

    /** A holds, B's try fails and B's acquire waits; B gets the lock when A
     *  lets go and reads what A wrote under it; then both increment a plain
     *  znode under the lock and no increment is lost. */
    static void mutex(Run r) throws Exception {
        String path = r.root + "/mutex", data = r.root + "/data";
        r.a.create().creatingParentsIfNeeded().forPath(data, b("0"));
        InterProcessMutex ma = new InterProcessMutex(r.a, path), mb = new InterProcessMutex(r.b, path);
        must(ma.acquire(WAIT, TimeUnit.SECONDS), "A acquires the free lock");
        r.a.setData().forPath(data, b("written by A under the lock"));
        must(!r.actorB.call("B's try", () -> mb.acquire(0, TimeUnit.MILLISECONDS)), "B's acquire without waiting fails while A holds the lock");
        AtomicBoolean aHolds = new AtomicBoolean(true);
        Bg<boolean[]> bg = new Bg<>(r.actorB, "B's acquire", () -> new boolean[] {mb.acquire(WAIT, TimeUnit.SECONDS), aHolds.get()});
        waitUntil(() -> ma.getParticipantNodes().size() == 2, "A to see two participants");
        waitUntil(() -> blockedIn(bg.thread, LOCKS + "LockInternals", "internalLockLoop") || bg.isDone(), "B to wait for the lock");
        must(!bg.isDone(), "B's acquire waits while A holds the lock");
        aHolds.set(false);
        ma.release();
        boolean[] got = bg.await();
        must(got[0], "B acquires the lock after A released it");
        must(!got[1], "B acquired the lock while A still held it");
        String v = s(r.b.getData().forPath(data));
        must("written by A under the lock".equals(v), "B, holding the lock after A, reads A's write made under it: got " + v);
        must(!ma.acquire(0, TimeUnit.MILLISECONDS), "A's acquire without waiting fails while B holds the lock");
        r.actorB.call("B's release", () -> { mb.release(); return null; });

        r.b.setData().forPath(data, b("0"));
        int rounds = 8;
        AtomicReference<String> inside = new AtomicReference<>();
        List<String> overlaps = Collections.synchronizedList(new ArrayList<>());
        List<Bg<Void>> workers = new ArrayList<>();
        for (Object[] w : new Object[][] {{"A", r.a, ma}, {"B", r.b, mb}}) {
            String name = (String) w[0];
            CuratorFramework c = (CuratorFramework) w[1];
            InterProcessMutex m = (InterProcessMutex) w[2];
            workers.add(new Bg<>(name + "'s increments", () -> {
                for (int i = 0; i < rounds; i++) {
                    must(m.acquire(WAIT, TimeUnit.SECONDS), name + " acquires the lock for an increment");
                    try {
                        if (!inside.compareAndSet(null, name)) overlaps.add(name + " entered while " + inside.get() + " held the lock");
                        int n = Integer.parseInt(s(c.getData().forPath(data)));
                        c.setData().forPath(data, b(Integer.toString(n + 1)));
                        inside.compareAndSet(name, null);
                    } finally {
                        m.release();
                    }
                }
                return null;
            }));
        }
        for (Bg<Void> w : workers) w.await(2 * WAIT);
        must(overlaps.isEmpty(), "mutual exclusion: " + overlaps);
        must(ma.acquire(WAIT, TimeUnit.SECONDS), "A acquires the lock to read the total");
        int total = Integer.parseInt(s(r.a.getData().forPath(data)));
        ma.release();
        must(total == 2 * rounds, "read-modify-write under the lock lost updates: " + total + ", not " + 2 * rounds);
    }

    /** Readers share; B's write lock waits for A's read lock and then reads
     *  alone; A's read lock waits for B's write lock and sees B's write. */
    static void readWrite(Run r) throws Exception {
        String path = r.root + "/rw", data = r.root + "/data";
        r.a.create().creatingParentsIfNeeded().forPath(data, b("0"));
        InterProcessReadWriteLock la = new InterProcessReadWriteLock(r.a, path), lb = new InterProcessReadWriteLock(r.b, path);
        Actor aa = r.actorA, ab = r.actorB;
        must(aa.call("A's read lock", () -> la.readLock().acquire(WAIT, TimeUnit.SECONDS)), "A takes the read lock");
        must(ab.call("B's read lock", () -> lb.readLock().acquire(WAIT, TimeUnit.SECONDS)), "B takes the read lock while A reads");
        ab.call("B's read unlock", () -> { lb.readLock().release(); return null; });
        must(!ab.call("B's write try", () -> lb.writeLock().acquire(0, TimeUnit.MILLISECONDS)), "B's write lock without waiting fails while A reads");
        AtomicBoolean aReads = new AtomicBoolean(true);
        Bg<boolean[]> bw = new Bg<>(ab, "B's write lock", () -> new boolean[] {lb.writeLock().acquire(WAIT, TimeUnit.SECONDS), aReads.get()});
        waitUntil(() -> la.writeLock().getParticipantNodes().size() == 1, "A to see B's write lock node");
        waitUntil(() -> blockedIn(bw.thread, LOCKS + "LockInternals", "internalLockLoop") || bw.isDone(), "B to wait for the write lock");
        must(!bw.isDone(), "B's write lock waits while A reads");
        aReads.set(false);
        aa.call("A's read unlock", () -> { la.readLock().release(); return null; });
        boolean[] got = bw.await();
        must(got[0], "B takes the write lock after A's read lock is released");
        must(!got[1], "B took the write lock while A held the read lock");
        must(!aa.call("A's read try", () -> la.readLock().acquire(0, TimeUnit.MILLISECONDS)), "A's read lock without waiting fails while B writes");
        r.b.setData().forPath(data, b("written by B under the write lock"));
        AtomicBoolean bWrites = new AtomicBoolean(true);
        Bg<boolean[]> ar = new Bg<>(aa, "A's read lock", () -> new boolean[] {la.readLock().acquire(WAIT, TimeUnit.SECONDS), bWrites.get()});
        waitUntil(() -> blockedIn(ar.thread, LOCKS + "LockInternals", "internalLockLoop") || ar.isDone(), "A to wait for the read lock");
        must(!ar.isDone(), "A's read lock waits while B writes");
        bWrites.set(false);
        ab.call("B's write unlock", () -> { lb.writeLock().release(); return null; });
        got = ar.await();
        must(got[0], "A takes the read lock after B's write lock is released");
        must(!got[1], "A took the read lock while B held the write lock");
        String v = s(r.a.getData().forPath(data));
        must("written by B under the write lock".equals(v), "A, reading after B's write lock, sees B's write: got " + v);
        aa.call("A's read unlock", () -> { la.readLock().release(); return null; });
    }

    /** Two leases: B waits while A holds both and gets each one A returns;
     *  then with one lease A and B never hold it at once. */
    static void semaphore(Run r) throws Exception {
        String path = r.root + "/sem";
        InterProcessSemaphoreV2 sa = new InterProcessSemaphoreV2(r.a, path, 2), sb = new InterProcessSemaphoreV2(r.b, path, 2);
        Collection<Lease> held = sa.acquire(2, WAIT, TimeUnit.SECONDS);
        must(held != null && held.size() == 2, "A takes both leases");
        List<Lease> aLeases = new ArrayList<>(held);
        must(sb.acquire(0, TimeUnit.MILLISECONDS) == null, "B gets no lease without waiting while A holds both");
        Bg<Lease> bl = new Bg<>("B's lease", () -> sb.acquire(WAIT, TimeUnit.SECONDS));
        waitUntil(() -> sa.getParticipantNodes().size() == 3, "A to see three lease nodes");
        waitUntil(() -> blockedIn(bl.thread, LOCKS + "InterProcessSemaphoreV2", "internalAcquire1Lease") || bl.isDone(), "B to wait for a lease");
        must(!bl.isDone(), "B waits for a lease while A holds both");
        sa.returnLease(aLeases.remove(0));
        Lease bLease = bl.await();
        must(bLease != null, "B gets the lease A returned");
        waitUntil(() -> sa.getParticipantNodes().size() == 2, "A to see two lease nodes");
        must(sa.acquire(0, TimeUnit.MILLISECONDS) == null, "A gets no third lease while A and B hold both");
        sb.returnLease(bLease);
        sa.returnLease(aLeases.remove(0));
        waitUntil(() -> orEmpty(() -> new ArrayList<>(sb.getParticipantNodes())).isEmpty(), "B to see every lease returned");

        String one = r.root + "/one";
        AtomicReference<String> holder = new AtomicReference<>();
        List<String> overlaps = Collections.synchronizedList(new ArrayList<>());
        List<Bg<Void>> workers = new ArrayList<>();
        for (Object[] w : new Object[][] {{"A", r.a}, {"B", r.b}}) {
            String name = (String) w[0];
            InterProcessSemaphoreV2 sem = new InterProcessSemaphoreV2((CuratorFramework) w[1], one, 1);
            workers.add(new Bg<>(name + "'s leases", () -> {
                for (int i = 0; i < 6; i++) {
                    Lease l = sem.acquire(WAIT, TimeUnit.SECONDS);
                    must(l != null, name + " gets the single lease");
                    if (!holder.compareAndSet(null, name)) overlaps.add(name + " got the lease while " + holder.get() + " held it");
                    holder.compareAndSet(name, null);
                    sem.returnLease(l);
                }
                return null;
            }));
        }
        for (Bg<Void> w : workers) w.await(2 * WAIT);
        must(overlaps.isEmpty(), "one holder of a single lease at a time: " + overlaps);
    }

    /** A sets the barrier, B waits on it, A's removal lets B through; and the
     *  other way round. */
    static void barrier(Run r) throws Exception {
        String path = r.root + "/barrier";
        r.a.create().forPath(r.root);
        for (CuratorFramework[] ab : new CuratorFramework[][] {{r.a, r.b}, {r.b, r.a}}) {
            String setter = ab[0] == r.a ? "A" : "B", waiter = ab[0] == r.a ? "B" : "A";
            DistributedBarrier bs = new DistributedBarrier(ab[0], path), bw = new DistributedBarrier(ab[1], path);
            bs.setBarrier();
            sync(ab[1], path); // the waiter learns of the barrier from the setter, not from ZooKeeper
            AtomicBoolean removed = new AtomicBoolean();
            Bg<boolean[]> w = new Bg<>(waiter + "'s barrier wait", () -> new boolean[] {bw.waitOnBarrier(WAIT, TimeUnit.SECONDS), removed.get()});
            waitUntil(() -> blockedIn(w.thread, BARRIERS + "DistributedBarrier", "waitOnBarrier") || w.isDone(), waiter + " to wait on the barrier");
            must(!w.isDone(), waiter + " waits while the barrier is up");
            removed.set(true);
            bs.removeBarrier();
            boolean[] got = w.await();
            must(got[0], waiter + "'s wait returns true when " + setter + " removes the barrier");
            must(got[1], waiter + " passed the barrier before " + setter + " removed it");
            must(bw.waitOnBarrier(WAIT, TimeUnit.SECONDS), waiter + "'s second wait passes");
        }
    }

    /** A enters and waits for B; both pass once B enters; A waits in leave
     *  until B leaves; the barrier is empty afterwards. */
    static void doubleBarrier(Run r) throws Exception {
        String path = r.root + "/double";
        DistributedDoubleBarrier da = new DistributedDoubleBarrier(r.a, path, 2), db = new DistributedDoubleBarrier(r.b, path, 2);
        AtomicBoolean bEntering = new AtomicBoolean(), bLeaving = new AtomicBoolean();
        Bg<boolean[]> ea = new Bg<>("A's enter", () -> new boolean[] {da.enter(WAIT, TimeUnit.SECONDS), bEntering.get()});
        waitUntil(() -> blockedIn(ea.thread, BARRIERS + "DistributedDoubleBarrier", "internalEnter") || ea.isDone(), "A to wait in enter for B");
        must(!ea.isDone(), "A's enter waits for B");
        bEntering.set(true);
        Bg<Boolean> eb = new Bg<>("B's enter", () -> db.enter(WAIT, TimeUnit.SECONDS));
        boolean[] aIn = ea.await();
        boolean bIn = eb.await();
        must(aIn[0] && bIn, "both enter (A " + aIn[0] + ", B " + bIn + ")");
        must(aIn[1], "A passed enter before B entered");

        Bg<boolean[]> la = new Bg<>("A's leave", () -> new boolean[] {da.leave(WAIT, TimeUnit.SECONDS), bLeaving.get()});
        waitUntil(() -> blockedIn(la.thread, BARRIERS + "DistributedDoubleBarrier", "internalLeave") || la.isDone(), "A to wait in leave for B");
        must(!la.isDone(), "A's leave waits for B");
        bLeaving.set(true);
        Bg<Boolean> lb = new Bg<>("B's leave", () -> db.leave(WAIT, TimeUnit.SECONDS));
        boolean[] aOut = la.await();
        boolean bOut = lb.await();
        must(aOut[0] && bOut, "both leave (A " + aOut[0] + ", B " + bOut + ")");
        must(aOut[1], "A left before B started to leave");
        for (CuratorFramework c : List.of(r.a, r.b)) {
            sync(c, path);
            // Curator makes the barrier's node a container, which ZooKeeper
            // may already have removed, empty.
            List<String> kids = orEmpty(() -> c.getChildren().forPath(path));
            must(kids.isEmpty(), (c == r.a ? "A" : "B") + " sees the barrier empty after both left: " + kids);
        }
    }

    /** A leads; B's latch waits; B leads once A's latch closes; A's new
     *  latch leads once B's session ends. */
    static void leaderLatch(Run r) throws Exception {
        String path = r.root + "/latch";
        AtomicReference<String> leader = new AtomicReference<>();
        List<String> overlaps = Collections.synchronizedList(new ArrayList<>());
        java.util.function.Function<String, LeaderLatchListener> track = name -> new LeaderLatchListener() {
            public void isLeader() {
                if (!leader.compareAndSet(null, name)) overlaps.add(name + " elected while " + leader.get() + " led");
            }
            public void notLeader() { leader.compareAndSet(name, null); }
        };
        LeaderLatch la = new LeaderLatch(r.a, path, "a"), lb = new LeaderLatch(r.b, path, "b");
        la.addListener(track.apply("a"));
        lb.addListener(track.apply("b"));
        la.start();
        must(la.await(WAIT, TimeUnit.SECONDS), "A's latch leads");
        lb.start();
        waitUntil(() -> la.getParticipants().size() == 2, "A to see two participants");
        waitUntil(() -> "a".equals(lb.getLeader().getId()), "B to see A as the leader");
        must(!lb.hasLeadership(), "B's latch does not lead while A's does");
        // A's term ends as it closes its latch. (Curator deletes the latch's
        // node before it tells A's listener, so B may hear first.)
        leader.compareAndSet("a", null);
        la.close();
        must(lb.await(WAIT, TimeUnit.SECONDS), "B's latch leads after A's closed");
        waitUntil(() -> "b".equals(leader.get()), "B's listener to hear it leads");
        waitUntil(() -> lb.getParticipants().size() == 1, "B to see itself the only participant");

        LeaderLatch la2 = new LeaderLatch(r.a, path, "a2");
        la2.addListener(track.apply("a2"));
        la2.start();
        waitUntil(() -> lb.getParticipants().size() == 2, "B to see A's new latch");
        waitUntil(() -> "b".equals(la2.getLeader().getId()), "A to see B as the leader");
        leader.compareAndSet("b", null); // B's term ends with its session
        r.stop(r.b);
        must(la2.await(WAIT, TimeUnit.SECONDS), "A's new latch leads after B's session ended");
        must("a2".equals(la2.getLeader().getId()), "A sees itself the leader: " + la2.getLeader());
        leader.compareAndSet("a2", null);
        la2.close();

        // A contender on B's member leads and its host dies (its connection
        // cut, no closeSession): A leads once that session expires, neither
        // much before nor much after its timeout.
        String cpath = r.root + "/crash";
        Relay relay = new Relay(r.connectB.split(",")[0]);
        r.relays.add(relay);
        CuratorFramework c = r.client("C", relay.address(), CRASH_SESSION_MS);
        long negotiated = c.getZookeeperClient().getZooKeeper().getSessionTimeout();
        String session = "0x" + Long.toHexString(c.getZookeeperClient().getZooKeeper().getSessionId());
        LeaderLatch lc = new LeaderLatch(c, cpath, "c");
        lc.addListener(track.apply("c"));
        lc.start();
        must(lc.await(WAIT, TimeUnit.SECONDS), "the contender's latch leads");
        LeaderLatch la3 = new LeaderLatch(r.a, cpath, "a3");
        la3.addListener(track.apply("a3"));
        la3.start();
        waitUntil(() -> la3.getParticipants().size() == 2, "A to see the contender and itself");
        must(!la3.hasLeadership(), "A does not lead while the contender does");
        leader.compareAndSet("c", null); // the contender's term ends with its host
        r.stopped.add(c);
        long killed = System.nanoTime();
        relay.cut();
        must(la3.await(Math.max(WAIT, 4 * negotiated / 1000), TimeUnit.SECONDS),
             "A leads after the contender's host died (session " + session + ", timeout " + negotiated + "ms)");
        double took = (System.nanoTime() - killed) / 1e9;
        r.notes.add(String.format("A led %.2fs after the contender's connection was cut (session timeout %dms)", took, negotiated));
        must(took >= 0.5 * negotiated / 1000.0, String.format(
            "A led %.2fs after the contender's host died, before its session (%s, timeout %dms) could expire", took, session, negotiated));
        must(took <= 2.5 * negotiated / 1000.0, String.format(
            "A led %.2fs after the contender's host died: its session (%s, timeout %dms) expired late", took, session, negotiated));
        la3.close();
        must(overlaps.isEmpty(), "one leader at a time: " + overlaps);
    }

    /** A leads, B waits; each term ends when its holder lets go and the
     *  other, requeued, takes over; never two leaders at once. */
    static void leaderSelector(Run r) throws Exception {
        String path = r.root + "/selector";
        AtomicReference<String> leader = new AtomicReference<>();
        List<String> overlaps = Collections.synchronizedList(new ArrayList<>());
        Map<String, Semaphore> release = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> terms = new ConcurrentHashMap<>();
        List<LeaderSelector> selectors = new ArrayList<>();
        for (Object[] w : new Object[][] {{"a", r.a}, {"b", r.b}}) {
            String name = (String) w[0];
            release.put(name, new Semaphore(0));
            terms.put(name, new AtomicInteger());
            LeaderSelector sel = new LeaderSelector((CuratorFramework) w[1], path, new LeaderSelectorListenerAdapter() {
                public void takeLeadership(CuratorFramework c) throws Exception {
                    if (!leader.compareAndSet(null, name)) overlaps.add(name + " elected while " + leader.get() + " led");
                    terms.get(name).incrementAndGet();
                    try {
                        release.get(name).tryAcquire(2 * WAIT, TimeUnit.SECONDS);
                    } finally {
                        leader.compareAndSet(name, null);
                    }
                }
            });
            sel.setId(name);
            sel.autoRequeue();
            selectors.add(sel);
        }
        LeaderSelector sa = selectors.get(0), sb = selectors.get(1);
        try {
            sa.start();
            waitUntil(() -> "a".equals(leader.get()), "A to lead");
            sb.start();
            waitUntil(() -> sa.getParticipants().size() == 2, "A to see two participants");
            waitUntil(() -> "a".equals(sb.getLeader().getId()), "B to see A as the leader");
            must(!sb.hasLeadership() && "a".equals(leader.get()), "A alone leads while B waits");
            release.get("a").release();
            waitUntil(() -> "b".equals(leader.get()), "B to lead after A's term");
            waitUntil(() -> sb.getParticipants().size() == 2, "B to see A requeued");
            waitUntil(() -> "b".equals(sa.getLeader().getId()), "A to see B as the leader");
            release.get("b").release();
            waitUntil(() -> "a".equals(leader.get()) && terms.get("a").get() == 2, "A to lead again after B's term");
            must(terms.get("b").get() == 1, "B led once: " + terms.get("b").get());
            must(overlaps.isEmpty(), "one leader at a time: " + overlaps);
        } finally {
            release.get("a").release(10);
            release.get("b").release(10);
            sb.close();
            sa.close();
        }
    }

    static final QueueSerializer<String> STRINGS = new QueueSerializer<String>() {
        public byte[] serialize(String item) { return b(item); }
        public String deserialize(byte[] bytes) { return s(bytes); }
    };

    static QueueConsumer<String> into(BlockingQueue<String> got) {
        return new QueueConsumer<String>() {
            public void consumeMessage(String message) { got.add(message); }
            public void stateChanged(CuratorFramework c, ConnectionState state) {}
        };
    }

    /** B's consumer gets A's puts in order; then A and B both consume and
     *  every item is consumed exactly once, in order by each consumer. */
    static void queue(Run r) throws Exception {
        String path = r.root + "/queue";
        BlockingQueue<String> gotA = new LinkedBlockingQueue<>(), gotB = new LinkedBlockingQueue<>();
        DistributedQueue<String> producer = QueueBuilder.builder(r.a, null, STRINGS, path).buildQueue();
        DistributedQueue<String> qb = QueueBuilder.builder(r.b, into(gotB), STRINGS, path).buildQueue();
        DistributedQueue<String> qa = null;
        try {
            producer.start();
            qb.start();
            List<String> want = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                want.add(String.format("i%02d", i));
                producer.put(want.get(i));
            }
            List<String> got = new ArrayList<>();
            for (int i = 0; i < want.size(); i++) {
                String m = gotB.poll(WAIT, TimeUnit.SECONDS);
                must(m != null, "B consumes item " + i + " within " + WAIT + "s (got " + got + ")");
                got.add(m);
            }
            must(got.equals(want), "B consumes A's items in order: " + got);
            waitUntil(() -> r.a.getChildren().forPath(path).isEmpty(), "A to see the queue empty");

            qa = QueueBuilder.builder(r.a, into(gotA), STRINGS, path).buildQueue();
            qa.start();
            int n = 24;
            for (int i = 0; i < n; i++) producer.put(String.format("p%02d", i));
            waitUntil(() -> gotA.size() + gotB.size() >= n, "A and B to consume " + n + " items");
            List<String> a = new ArrayList<>(gotA), bb = new ArrayList<>(gotB), all = new ArrayList<>(a);
            all.addAll(bb);
            Collections.sort(all);
            List<String> every = new ArrayList<>();
            for (int i = 0; i < n; i++) every.add(String.format("p%02d", i));
            must(all.equals(every), "every item consumed exactly once: A " + a + ", B " + bb);
            for (List<String> l : List.of(a, bb)) {
                List<String> sorted = new ArrayList<>(l);
                Collections.sort(sorted);
                must(l.equals(sorted), (l == a ? "A" : "B") + " consumes in order: " + l);
            }
        } finally {
            if (qa != null) qa.close();
            qb.close();
            producer.close();
        }
    }

    /** A and B increment one counter at once; the total is exact and every
     *  increment has its own post value. */
    static void atomicLong(Run r) throws Exception {
        String path = r.root + "/counter";
        int n = 12;
        List<Long> posts = Collections.synchronizedList(new ArrayList<>());
        List<Bg<Void>> workers = new ArrayList<>();
        for (CuratorFramework c : List.of(r.a, r.b)) {
            DistributedAtomicLong counter = new DistributedAtomicLong(c, path, new RetryNTimes(50, 10));
            workers.add(new Bg<>((c == r.a ? "A" : "B") + "'s increments", () -> {
                for (int i = 0; i < n; i++) {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT);
                    AtomicValue<Long> v;
                    while (!(v = counter.increment()).succeeded()) {
                        must(System.nanoTime() < deadline, "an increment succeeds within " + WAIT + "s");
                    }
                    posts.add(v.postValue());
                }
                return null;
            }));
        }
        for (Bg<Void> w : workers) w.await(2 * WAIT);
        for (CuratorFramework c : List.of(r.a, r.b)) {
            sync(c, path);
            AtomicValue<Long> v = new DistributedAtomicLong(c, path, new RetryNTimes(3, 10)).get();
            must(v.succeeded() && v.postValue() == 2 * n, (c == r.a ? "A" : "B") + " reads the total " + v.postValue() + " after sync, not " + 2 * n);
        }
        List<Long> sorted = new ArrayList<>(posts);
        Collections.sort(sorted);
        List<Long> want = new ArrayList<>();
        for (long i = 1; i <= 2 * n; i++) want.add(i);
        must(sorted.equals(want), "each increment has its own post value: " + sorted);
        AtomicValue<Long> sub = new DistributedAtomicLong(r.b, path, new RetryNTimes(50, 10)).subtract(5L);
        must(sub.succeeded() && sub.postValue() == 2 * n - 5, "B subtracts 5: " + sub.postValue());
        sync(r.a, path);
        long v = new DistributedAtomicLong(r.a, path, new RetryNTimes(3, 10)).get().postValue();
        must(v == 2 * n - 5, "A reads B's subtraction after sync: " + v);
    }

    /** B's cache follows every change A makes under its path, in order. */
    static void cache(Run r) throws Exception {
        String path = r.root + "/cache";
        r.a.create().creatingParentsIfNeeded().forPath(path);
        sync(r.b, path);
        List<String> events = Collections.synchronizedList(new ArrayList<>());
        Map<String, List<Integer>> versions = new ConcurrentHashMap<>();
        CountDownLatch primed = new CountDownLatch(1);
        java.util.function.Function<ChildData, String> rel = d -> d.getPath().substring(path.length());
        CuratorCache cache = CuratorCache.build(r.b, path);
        cache.listenable().addListener(CuratorCacheListener.builder()
            .forCreates(d -> { if (!d.getPath().equals(path)) events.add("create " + rel.apply(d) + "=" + s(d.getData())); })
            .forChanges((o, d) -> {
                if (d.getPath().equals(path)) return;
                events.add("change " + rel.apply(d) + "=" + s(d.getData()));
                versions.computeIfAbsent(rel.apply(d), k -> Collections.synchronizedList(new ArrayList<>())).add(d.getStat().getVersion());
            })
            .forDeletes(d -> { if (!d.getPath().equals(path)) events.add("delete " + rel.apply(d)); })
            .forInitialized(primed::countDown)
            .build());
        try {
            cache.start();
            must(primed.await(WAIT, TimeUnit.SECONDS), "B's cache initializes");
            List<String> want = new ArrayList<>();
            java.util.function.Function<String, Cond> has = p -> () -> {
                String d = cache.get(path + p).map(c -> s(c.getData())).orElse(null);
                return d != null;
            };
            r.a.create().forPath(path + "/x", b("v0"));
            want.add("create /x=v0");
            waitUntil(() -> "v0".equals(cache.get(path + "/x").map(c -> s(c.getData())).orElse(null)), "B's cache to see /x=v0");
            for (int i = 1; i <= 5; i++) {
                String v = "v" + i;
                r.a.setData().forPath(path + "/x", b(v));
                want.add("change /x=" + v);
                waitUntil(() -> v.equals(cache.get(path + "/x").map(c -> s(c.getData())).orElse(null)), "B's cache to see /x=" + v);
            }
            r.a.create().forPath(path + "/y", b("y"));
            want.add("create /y=y");
            waitUntil(has.apply("/y"), "B's cache to see /y");
            r.a.create().forPath(path + "/y/z", b("z"));
            want.add("create /y/z=z");
            waitUntil(has.apply("/y/z"), "B's cache to see /y/z");
            r.a.delete().forPath(path + "/x");
            want.add("delete /x");
            waitUntil(() -> !has.apply("/x").holds(), "B's cache to see /x deleted");
            r.a.delete().deletingChildrenIfNeeded().forPath(path + "/y");
            want.add("delete /y/z");
            want.add("delete /y");
            waitUntil(() -> cache.size() == 1, "B's cache to hold only its root");
            waitUntil(() -> events.size() >= want.size(), "B's listener to hear " + want.size() + " events");
            must(events.equals(want), "B's cache listener heard every change in order: " + events);

            r.a.create().forPath(path + "/burst", b("0"));
            waitUntil(has.apply("/burst"), "B's cache to see /burst");
            int n = 30;
            for (int i = 1; i <= n; i++) r.a.setData().forPath(path + "/burst", b(Integer.toString(i)));
            waitUntil(() -> Integer.toString(n).equals(cache.get(path + "/burst").map(c -> s(c.getData())).orElse(null)), "B's cache to end on A's last write");
            waitUntil(() -> versions.containsKey("/burst") && versions.get("/burst").contains(n), "B's listener to hear the last version");
            List<Integer> vs = new ArrayList<>(versions.get("/burst"));
            for (int i = 1; i < vs.size(); i++) must(vs.get(i) > vs.get(i - 1), "B's cache saw versions rising: " + vs);
        } finally {
            cache.close();
        }
        movedSession(r);
    }

    /** The distinct members named by connect strings, in order. */
    static List<String> members(String... connects) {
        List<String> out = new ArrayList<>();
        for (String c : connects) for (String m : c.split(",")) if (!out.contains(m)) out.add(m);
        return out;
    }

    /** A session moves: C, reaching the members through relays, loses its
     *  connection while A writes; it reconnects to another member with the
     *  same session and its ephemeral node, its one-shot watch fires for what
     *  it missed and its cache catches up. */
    static void movedSession(Run r) throws Exception {
        List<Relay> relays = new ArrayList<>();
        for (String m : members(r.connectB, r.connectA)) relays.add(new Relay(m));
        r.relays.addAll(relays);
        List<String> addrs = new ArrayList<>();
        for (Relay rl : relays) addrs.add(rl.address());
        CuratorFramework c = r.client("C", String.join(",", addrs), 15000, true);
        List<ConnectionState> states = r.states.get(c);
        long sid = c.getZookeeperClient().getZooKeeper().getSessionId();
        String mpath = r.root + "/moved", eph = r.root + "/moved-eph";
        r.a.create().creatingParentsIfNeeded().forPath(mpath, b("m0"));
        sync(c, mpath);
        c.create().withMode(CreateMode.EPHEMERAL).forPath(eph, b("c"));
        BlockingQueue<String> events = new LinkedBlockingQueue<>();
        byte[] first = c.getData().usingWatcher((org.apache.curator.framework.api.CuratorWatcher) ev -> {
            if (ev.getType() != org.apache.zookeeper.Watcher.Event.EventType.None) events.add(ev.getType() + " " + ev.getPath());
        }).forPath(mpath);
        must("m0".equals(s(first)), "C reads m0: " + s(first));
        CuratorCache cache = CuratorCache.build(c, mpath);
        CountDownLatch primed = new CountDownLatch(1);
        cache.listenable().addListener(CuratorCacheListener.builder().forInitialized(primed::countDown).build());
        java.util.function.Supplier<String> cached = () -> cache.get(mpath).map(d -> s(d.getData())).orElse(null);
        try {
            cache.start();
            must(primed.await(WAIT, TimeUnit.SECONDS), "C's cache initializes");
            must("m0".equals(cached.get()), "C's cache holds m0: " + cached.get());
            List<Relay> on = new ArrayList<>();
            for (Relay rl : relays) if (rl.carrying()) on.add(rl);
            must(on.size() == 1, "C's connection goes through one relay: " + on.size() + " do");
            long cut = System.nanoTime();
            on.get(0).cut();
            r.a.setData().forPath(mpath, b("m1"));
            waitUntil(() -> states.contains(ConnectionState.SUSPENDED), "C to notice its connection cut");
            waitUntil(() -> states.get(states.size() - 1) == ConnectionState.RECONNECTED, "C to reconnect to another member");
            r.notes.add(String.format("C moved to another member %.2fs after its connection was cut", (System.nanoTime() - cut) / 1e9));
            long now = c.getZookeeperClient().getZooKeeper().getSessionId();
            must(now == sid, String.format("C keeps its session (0x%x, now 0x%x)", sid, now));
            must(!states.contains(ConnectionState.LOST), "C's session survives the move: states " + states);
            String ev = events.poll(WAIT, TimeUnit.SECONDS);
            must(("NodeDataChanged " + mpath).equals(ev), "C's one-shot watch fires for A's write made while C was away: " + ev);
            waitUntil(() -> "m1".equals(cached.get()), "C's cache to catch up with m1");
            Stat st = r.a.checkExists().forPath(eph);
            must(st != null && st.getEphemeralOwner() == sid, "A sees C's ephemeral node still owned by C: " + st);
            r.a.setData().forPath(mpath, b("m2"));
            waitUntil(() -> "m2".equals(cached.get()), "C's cache, watching through its new member, to see m2");
            c.setData().forPath(mpath, b("m3"));
            waitUntil(() -> "m3".equals(s(r.a.getData().forPath(mpath))), "A to read C's write through the new member");
            must(events.isEmpty(), "C's one-shot watch fired once: " + events);
        } finally {
            cache.close();
        }
    }

    /** A's ephemeral PersistentNode is seen by B, follows A's setData, comes
     *  back when B deletes it and goes when A closes it; B's goes with B's
     *  session. */
    static void persistentNode(Run r) throws Exception {
        String path = r.root + "/pnode";
        r.a.create().forPath(r.root);
        PersistentNode pa = new PersistentNode(r.a, CreateMode.EPHEMERAL, false, path, b("a1"));
        try {
            pa.start();
            must(pa.waitForInitialCreate(WAIT, TimeUnit.SECONDS), "A's node is created");
            waitUntil(() -> "a1".equals(dataOrNull(r.b, path)), "B to see A's node with a1");
            pa.setData(b("a2"));
            waitUntil(() -> "a2".equals(dataOrNull(r.b, path)), "B to see A's node with a2");
            long aSession = r.a.getZookeeperClient().getZooKeeper().getSessionId();
            Stat before = r.b.checkExists().forPath(path);
            must(before != null && before.getEphemeralOwner() == aSession, "A's session owns the node: " + before);
            r.b.delete().forPath(path);
            waitUntil(() -> {
                Stat st = r.b.checkExists().forPath(path);
                return st != null && st.getCzxid() != before.getCzxid();
            }, "A's PersistentNode to recreate the node B deleted");
            must("a2".equals(dataOrNull(r.b, path)), "the recreated node holds a2: " + dataOrNull(r.b, path));
            Stat after = r.b.checkExists().forPath(path);
            must(after.getEphemeralOwner() == aSession, "the recreated node belongs to A's session");
        } finally {
            pa.close();
        }
        waitUntil(() -> r.b.checkExists().forPath(path) == null, "B to see A's node gone after A closed it");

        String bpath = r.root + "/bnode";
        PersistentNode pb = new PersistentNode(r.b, CreateMode.EPHEMERAL, false, bpath, b("b"));
        pb.start();
        must(pb.waitForInitialCreate(WAIT, TimeUnit.SECONDS), "B's node is created");
        waitUntil(() -> "b".equals(dataOrNull(r.a, bpath)), "A to see B's node");
        r.stop(r.b); // B's node goes with its session (closing pb afterwards would fail on the closed client)
        waitUntil(() -> r.a.checkExists().forPath(bpath) == null, "A to see B's node go with B's session");
    }

    static final Map<String, Scenario> SCENARIOS = new LinkedHashMap<>();
    static {
        SCENARIOS.put("InterProcessMutex", CuratorRecipes::mutex);
        SCENARIOS.put("InterProcessReadWriteLock", CuratorRecipes::readWrite);
        SCENARIOS.put("InterProcessSemaphoreV2", CuratorRecipes::semaphore);
        SCENARIOS.put("DistributedBarrier", CuratorRecipes::barrier);
        SCENARIOS.put("DistributedDoubleBarrier", CuratorRecipes::doubleBarrier);
        SCENARIOS.put("LeaderLatch", CuratorRecipes::leaderLatch);
        SCENARIOS.put("LeaderSelector", CuratorRecipes::leaderSelector);
        SCENARIOS.put("DistributedQueue", CuratorRecipes::queue);
        SCENARIOS.put("DistributedAtomicLong", CuratorRecipes::atomicLong);
        SCENARIOS.put("CuratorCache", CuratorRecipes::cache);
        SCENARIOS.put("PersistentNode", CuratorRecipes::persistentNode);
    }

    /** The innermost line of this file where t was thrown. */
    static String where(Throwable t) {
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().startsWith("CuratorRecipes") && !Set.of("must", "waitUntil", "await", "call").contains(e.getMethodName())) {
                return " [at line " + e.getLineNumber() + " in " + e.getMethodName() + "]";
            }
        }
        return "";
    }

    /** Returns null if the run passed, else why it failed. */
    static String oneRun(String recipe, String connectA, String connectB, List<String> notes) {
        Run run = null;
        String why;
        try {
            run = new Run(recipe, connectA, connectB);
            SCENARIOS.get(recipe).run(run);
            if (run.drops.isEmpty()) return null;
            return "connection trouble: " + String.join("; ", run.drops);
        } catch (Fail f) {
            why = f.getMessage() + where(f);
        } catch (Throwable t) {
            why = t + where(t);
        } finally {
            if (run != null) {
                notes.addAll(run.notes);
                run.close();
            }
        }
        if (run != null && !run.drops.isEmpty()) why += " (connection trouble: " + String.join("; ", run.drops) + ")";
        return why;
    }

    static String stackOf(Thread t) {
        StringBuilder sb = new StringBuilder();
        StackTraceElement[] st = t.getStackTrace();
        for (int i = 0; i < Math.min(8, st.length); i++) sb.append(i == 0 ? "" : " < ").append(st[i]);
        return sb.toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 4 || !SCENARIOS.containsKey(args[0])) {
            System.err.println("usage: CuratorRecipes RECIPE CONNECT_A CONNECT_B RUNS; recipes: " + SCENARIOS.keySet());
            System.exit(2);
        }
        String recipe = args[0];
        int runs = Integer.parseInt(args[3]), passes = 0;
        for (int i = 1; i <= runs; i++) {
            long start = System.nanoTime();
            String[] why = new String[1];
            List<String> notes = Collections.synchronizedList(new ArrayList<>());
            Thread t = new Thread(() -> why[0] = oneRun(recipe, args[1], args[2], notes), "run-" + i);
            t.setDaemon(true);
            t.start();
            t.join(TimeUnit.SECONDS.toMillis(RUN_LIMIT));
            double took = (System.nanoTime() - start) / 1e9;
            if (t.isAlive()) {
                System.out.printf("FAIL run %d (%.1fs): %s hung for %ds; giving up; run thread at %s%n", i, took, recipe, RUN_LIMIT, stackOf(t));
                System.out.printf("RESULT %d/%d%n", passes, runs);
                System.out.flush();
                Runtime.getRuntime().halt(1);
            }
            for (String n : notes) System.out.printf("NOTE run %d: %s%n", i, n);
            if (why[0] == null) {
                passes++;
            } else {
                System.out.printf("FAIL run %d (%.1fs): %s%n", i, took, why[0]);
            }
            System.out.flush();
        }
        System.out.printf("RESULT %d/%d%n", passes, runs);
        System.out.flush();
        System.exit(passes == runs ? 0 : 1);
    }
}
