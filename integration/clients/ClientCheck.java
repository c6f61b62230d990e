// ClientCheck drives Apache ZooKeeper's Java client (3.8) and Curator (5.4)
// against a server and checks the answers. It prints one "ok NAME" or
// "FAIL NAME: why" line per check and exits with the number of failures.
//
//   java -cp "$CP" ClientCheck 127.0.0.1:2181
//
// integration/clients_test.go (build tag "clients") runs it against zkraft
// and, when ZKRAFT_REALZK names one, against a real ZooKeeper.
import java.nio.charset.StandardCharsets;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.*;
import org.apache.zookeeper.data.*;

public class ClientCheck {
    static String server;
    static String root;
    static int failures = 0;

    interface Check { void run() throws Exception; }

    static void check(String name, Check c) {
        try {
            c.run();
            System.out.println("ok " + name);
        } catch (Throwable t) {
            failures++;
            System.out.println("FAIL " + name + ": " + t);
        }
    }

    static void expect(boolean cond, String what) {
        if (!cond) throw new AssertionError(what);
    }

    static ZooKeeper connect() throws Exception {
        CountDownLatch up = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(server, 10000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) up.countDown();
        });
        expect(up.await(10, TimeUnit.SECONDS), "connected within 10s");
        return zk;
    }

    static CuratorFramework curator() throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(server, 10000, 10000, new ExponentialBackoffRetry(100, 3));
        c.start();
        expect(c.blockUntilConnected(10, TimeUnit.SECONDS), "curator connected within 10s");
        return c;
    }

    static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    public static void main(String[] args) throws Exception {
        server = args[0];
        root = "/client-check-" + Long.toHexString(System.nanoTime());
        ZooKeeper zk = connect();
        zk.create(root, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        javaClientChecks(zk);
        curatorChecks();
        ZKUtil.deleteRecursive(zk, root);
        zk.close();
        System.out.println(failures == 0 ? "PASS" : "FAILURES " + failures);
        System.exit(failures);
    }

    static void javaClientChecks(ZooKeeper zk) throws Exception {
        check("java create, create2 with Stat, sequential, ephemeral, container", () -> {
            expect(zk.create(root + "/p", b("v"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT).equals(root + "/p"), "persistent");
            Stat st = new Stat();
            zk.create(root + "/p2", b("vv"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT, st);
            expect(st.getDataLength() == 2 && st.getCzxid() == st.getMzxid() && st.getVersion() == 0, "create2 stat " + st);
            String seq = zk.create(root + "/s-", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT_SEQUENTIAL);
            expect(seq.equals(root + "/s-0000000002"), "sequential name " + seq);
            zk.create(root + "/e", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
            expect(zk.exists(root + "/e", false).getEphemeralOwner() == zk.getSessionId(), "ephemeral owner");
            zk.create(root + "/c", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.CONTAINER);
            expect(zk.exists(root + "/c", false).getEphemeralOwner() == 0, "container owner reported as 0");
        });
        check("java getData, setData, versions, exists, getChildren with Stat", () -> {
            Stat st = new Stat();
            expect(Arrays.equals(zk.getData(root + "/p", false, st), b("v")), "data");
            Stat st2 = zk.setData(root + "/p", b("w"), st.getVersion());
            expect(st2.getVersion() == 1 && st2.getMzxid() > st.getMzxid(), "setData stat");
            try { zk.setData(root + "/p", b("x"), 7); expect(false, "bad version accepted"); }
            catch (KeeperException.BadVersionException expected) {}
            expect(zk.exists(root + "/none", false) == null, "exists on missing");
            Stat ps = new Stat();
            List<String> kids = zk.getChildren(root, false, ps);
            expect(kids.size() == 5 && ps.getNumChildren() == 5, "children " + kids);
        });
        check("java one-shot watches", () -> {
            BlockingQueue<WatchedEvent> evs = new LinkedBlockingQueue<>();
            zk.getData(root + "/p", evs::add, null);
            zk.exists(root + "/w", evs::add);
            zk.setData(root + "/p", b("y"), -1);
            zk.create(root + "/w", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            WatchedEvent a = evs.poll(10, TimeUnit.SECONDS), c = evs.poll(10, TimeUnit.SECONDS);
            expect(a != null && a.getType() == Watcher.Event.EventType.NodeDataChanged, "data changed " + a);
            expect(c != null && c.getType() == Watcher.Event.EventType.NodeCreated, "created " + c);
        });
        check("java multi and its rollback", () -> {
            List<OpResult> rs = zk.multi(Arrays.asList(
                Op.create(root + "/m", b("1"), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT),
                Op.setData(root + "/m", b("2"), 0), Op.check(root + "/m", 1)));
            expect(rs.size() == 3, "results " + rs);
            try {
                zk.multi(Arrays.asList(Op.delete(root + "/m", -1), Op.delete(root + "/none", -1)));
                expect(false, "failed multi succeeded");
            } catch (KeeperException.NoNodeException e) {
                List<OpResult> r = e.getResults();
                expect(((OpResult.ErrorResult) r.get(0)).getErr() == 0, "first op rolled back with 0");
            }
            expect(zk.exists(root + "/m", false) != null, "rolled back");
        });
        check("java addWatch persistent recursive, removeWatches", () -> {
            BlockingQueue<WatchedEvent> evs = new LinkedBlockingQueue<>();
            Watcher w = evs::add;
            zk.addWatch(root + "/r", w, AddWatchMode.PERSISTENT_RECURSIVE);
            zk.create(root + "/r", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            zk.create(root + "/r/a", null, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            zk.setData(root + "/r/a", b("x"), -1);
            String seen = "";
            for (int i = 0; i < 3; i++) {
                WatchedEvent e = evs.poll(10, TimeUnit.SECONDS);
                expect(e != null, "event " + i);
                seen += e.getType() + ":" + e.getPath().substring(root.length()) + " ";
            }
            expect(seen.equals("NodeCreated:/r NodeCreated:/r/a NodeDataChanged:/r/a "), seen);
            zk.removeWatches(root + "/r", w, Watcher.WatcherType.Any, false);
            WatchedEvent removed = evs.poll(10, TimeUnit.SECONDS);
            expect(removed != null && removed.getType() == Watcher.Event.EventType.PersistentWatchRemoved, "removed " + removed);
            zk.setData(root + "/r/a", b("y"), -1);
            expect(evs.poll(300, TimeUnit.MILLISECONDS) == null, "no event after removeWatches");
            try { zk.removeAllWatches(root + "/r", Watcher.WatcherType.Any, false); expect(false, "nothing to remove"); }
            catch (KeeperException.NoWatcherException expected) {}
        });
        check("java getEphemerals, getAllChildrenNumber, whoAmI, sync", () -> {
            if (server.contains("/")) {
                // The Java client sends getEphemerals' prefix without its
                // chroot, so nothing under the chroot matches it: ZooKeeper
                // 3.8.0 answers [] too.
                expect(zk.getEphemerals(root).isEmpty(), "ephemerals through a chroot " + zk.getEphemerals(root));
            } else {
                expect(zk.getEphemerals(root).equals(List.of(root + "/e")), "ephemerals " + zk.getEphemerals(root));
            }
            expect(zk.getAllChildrenNumber(root) == 9, "all children " + zk.getAllChildrenNumber(root));
            List<ClientInfo> who = zk.whoAmI();
            expect(who.size() == 1 && who.get(0).getAuthScheme().equals("ip"), "whoAmI " + who);
            CountDownLatch synced = new CountDownLatch(1);
            zk.sync(root, (rc, path, ctx) -> synced.countDown(), null);
            expect(synced.await(10, TimeUnit.SECONDS), "sync answered");
        });
        check("java digest auth and ACLs", () -> {
            ZooKeeper owner = connect();
            owner.addAuthInfo("digest", b("alice:secret"));
            owner.create(root + "/acl", b("s"), ZooDefs.Ids.CREATOR_ALL_ACL, CreateMode.PERSISTENT);
            List<ACL> acl = owner.getACL(root + "/acl", new Stat());
            expect(acl.size() == 1 && acl.get(0).getId().getScheme().equals("digest"), "acl " + acl);
            try { zk.getData(root + "/acl", false, null); expect(false, "read without auth"); }
            catch (KeeperException.NoAuthException expected) {}
            owner.delete(root + "/acl", -1);
            owner.close();
        });
        check("java /zookeeper/config is readable (getConfig)", () -> {
            zk.getConfig(false, new Stat());
        });
    }

    static void curatorChecks() throws Exception {
        check("curator InterProcessMutex excludes and re-enters", () -> {
            CuratorFramework a = curator(), b = curator();
            InterProcessMutex ma = new InterProcessMutex(a, root + "/mutex"), mb = new InterProcessMutex(b, root + "/mutex");
            expect(ma.acquire(10, TimeUnit.SECONDS), "a acquires");
            expect(ma.acquire(1, TimeUnit.SECONDS), "a re-enters");
            expect(!mb.acquire(300, TimeUnit.MILLISECONDS), "b is excluded");
            ma.release(); ma.release();
            expect(mb.acquire(10, TimeUnit.SECONDS), "b acquires after a releases");
            mb.release();
            a.close(); b.close();
        });
        check("curator InterProcessReadWriteLock: readers share, writers exclude", () -> {
            CuratorFramework a = curator(), b = curator();
            InterProcessReadWriteLock la = new InterProcessReadWriteLock(a, root + "/rw"), lb = new InterProcessReadWriteLock(b, root + "/rw");
            expect(la.readLock().acquire(10, TimeUnit.SECONDS), "a reads");
            expect(lb.readLock().acquire(10, TimeUnit.SECONDS), "b reads too");
            expect(!lb.writeLock().acquire(300, TimeUnit.MILLISECONDS), "b cannot write while a reads");
            la.readLock().release(); lb.readLock().release();
            expect(lb.writeLock().acquire(10, TimeUnit.SECONDS), "b writes");
            expect(!la.readLock().acquire(300, TimeUnit.MILLISECONDS), "a cannot read while b writes");
            lb.writeLock().release();
            a.close(); b.close();
        });
        check("curator LeaderLatch elects one and fails over", () -> {
            List<CuratorFramework> cs = new ArrayList<>();
            List<LeaderLatch> latches = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                CuratorFramework c = curator();
                cs.add(c);
                LeaderLatch l = new LeaderLatch(c, root + "/leader", "p" + i);
                l.start();
                latches.add(l);
            }
            LeaderLatch leader = null;
            long deadline = System.currentTimeMillis() + 10000;
            while (leader == null && System.currentTimeMillis() < deadline) {
                for (LeaderLatch l : latches) if (l.hasLeadership()) leader = l;
                Thread.sleep(20);
            }
            expect(leader != null, "a leader within 10s");
            int leaders = 0;
            for (LeaderLatch l : latches) if (l.hasLeadership()) leaders++;
            expect(leaders == 1, "exactly one leader, saw " + leaders);
            leader.close();
            latches.remove(leader);
            LeaderLatch next = null;
            deadline = System.currentTimeMillis() + 10000;
            while (next == null && System.currentTimeMillis() < deadline) {
                for (LeaderLatch l : latches) if (l.hasLeadership()) next = l;
                Thread.sleep(20);
            }
            expect(next != null, "a new leader after the first one closed");
            for (LeaderLatch l : latches) l.close();
            for (CuratorFramework c : cs) c.close();
        });
        check("curator DistributedAtomicLong counts every increment", () -> {
            CuratorFramework a = curator(), b = curator();
            ExecutorService pool = Executors.newFixedThreadPool(2);
            List<Future<Integer>> done = new ArrayList<>();
            for (CuratorFramework c : List.of(a, b)) {
                done.add(pool.submit(() -> {
                    DistributedAtomicLong n = new DistributedAtomicLong(c, root + "/counter", new RetryNTimes(1000, 1));
                    int ok = 0;
                    for (int i = 0; i < 50; i++) if (n.increment().succeeded()) ok++;
                    return ok;
                }));
            }
            int ok = done.get(0).get() + done.get(1).get();
            AtomicValue<Long> v = new DistributedAtomicLong(a, root + "/counter", new RetryNTimes(3, 1)).get();
            expect(v.succeeded() && v.postValue() == ok && ok == 100, "counter " + v.postValue() + " after " + ok + " increments");
            pool.shutdown();
            a.close(); b.close();
        });
        check("curator CuratorCache sees creates, changes and deletes", () -> {
            CuratorFramework c = curator();
            BlockingQueue<String> evs = new LinkedBlockingQueue<>();
            CuratorCache cache = CuratorCache.build(c, root + "/cache");
            cache.listenable().addListener(CuratorCacheListener.builder()
                .forCreates(n -> evs.add("create " + n.getPath().substring(root.length())))
                .forChanges((o, n) -> evs.add("change " + n.getPath().substring(root.length())))
                .forDeletes(o -> evs.add("delete " + o.getPath().substring(root.length())))
                .build());
            CountDownLatch primed = new CountDownLatch(1);
            cache.listenable().addListener(CuratorCacheListener.builder().forInitialized(primed::countDown).build());
            cache.start();
            expect(primed.await(10, TimeUnit.SECONDS), "cache initialized");
            // The cache reads a node again after each event, so each change
            // waits for the cache to have seen the one before.
            List<Check> steps = List.of(
                () -> c.create().forPath(root + "/cache", b("0")),
                () -> c.create().forPath(root + "/cache/x", b("1")),
                () -> c.setData().forPath(root + "/cache/x", b("2")),
                () -> c.delete().forPath(root + "/cache/x"));
            List<String> want = List.of("create /cache", "create /cache/x", "change /cache/x", "delete /cache/x");
            for (int i = 0; i < steps.size(); i++) {
                steps.get(i).run();
                String e = evs.poll(10, TimeUnit.SECONDS);
                expect(want.get(i).equals(e), "event " + i + ": want " + want.get(i) + ", got " + e);
            }
            cache.close();
            c.close();
        });
    }
}
