// LockInterop holds Curator 5.4's locks on request, so that a Go test can
// check that Curator and the Go lockrecipe package exclude each other on
// one path. It reads one command a line on stdin, runs it on its main thread
// (Curator's locks belong to the thread that took them) and prints one line
// of result on stdout:
//
//   lock | trylock MS | unlock | participants     InterProcessMutex on PATH/mutex
//   rlock | runlock | wlock | wunlock             InterProcessReadWriteLock on PATH/rw
//   tryrlock MS | trywlock MS
//   sem | trysem MS | unsem                       InterProcessSemaphoreV2 of 2 on PATH/sem
//   join ID | await | latch ID | leader | unlatch LeaderLatch on PATH/election (latch: join, await)
//   stress N FILE   take the mutex N times; inside, create FILE exclusively, hold 1ms, delete it
//   quit
//
//   java -cp "$CP" LockInterop 127.0.0.1:2181 /some/path
//
// integration/lockrecipe_clients_test.go (build tag "clients") drives it.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class LockInterop {
    static CuratorFramework client;
    static String path;
    static InterProcessMutex mutex;
    static InterProcessReadWriteLock rw;
    static InterProcessSemaphoreV2 sem;
    static Lease lease;
    static LeaderLatch latch;

    public static void main(String[] args) throws Exception {
        client = CuratorFrameworkFactory.newClient(args[0], 10000, 10000, new ExponentialBackoffRetry(100, 3));
        client.start();
        if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
            System.out.println("error not connected");
            System.exit(1);
        }
        path = args[1];
        mutex = new InterProcessMutex(client, path + "/mutex");
        rw = new InterProcessReadWriteLock(client, path + "/rw");
        sem = new InterProcessSemaphoreV2(client, path + "/sem", 2);
        System.out.println("ready");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String[] w = line.trim().split("\\s+");
            if (w[0].equals("quit")) break;
            String out;
            try {
                out = run(w);
            } catch (Exception e) {
                out = "error " + e;
            }
            System.out.println(out);
            System.out.flush();
        }
        if (latch != null) latch.close();
        client.close();
    }

    static String run(String[] w) throws Exception {
        switch (w[0]) {
            case "lock": mutex.acquire(); return "locked";
            case "trylock": return mutex.acquire(Long.parseLong(w[1]), TimeUnit.MILLISECONDS) ? "locked" : "busy";
            case "unlock": mutex.release(); return "unlocked";
            case "participants": return "participants " + String.join(",", mutex.getParticipantNodes());
            case "rlock": rw.readLock().acquire(); return "rlocked";
            case "tryrlock": return rw.readLock().acquire(Long.parseLong(w[1]), TimeUnit.MILLISECONDS) ? "rlocked" : "busy";
            case "runlock": rw.readLock().release(); return "runlocked";
            case "wlock": rw.writeLock().acquire(); return "wlocked";
            case "trywlock": return rw.writeLock().acquire(Long.parseLong(w[1]), TimeUnit.MILLISECONDS) ? "wlocked" : "busy";
            case "wunlock": rw.writeLock().release(); return "wunlocked";
            case "sem": lease = sem.acquire(); return "leased";
            case "trysem": lease = sem.acquire(Long.parseLong(w[1]), TimeUnit.MILLISECONDS); return lease != null ? "leased" : "busy";
            case "unsem": lease.close(); lease = null; return "unleased";
            case "join":
                latch = new LeaderLatch(client, path + "/election", w[1]);
                latch.start();
                return "joined";
            case "await": latch.await(); return "leading";
            case "latch": run(new String[] {"join", w[1]}); return run(new String[] {"await"});
            case "leader": return "leader " + latch.getLeader().getId();
            case "unlatch": latch.close(); latch = null; return "unlatched";
            case "stress": return stress(Integer.parseInt(w[1]), Paths.get(w[2]));
            default: return "error unknown command " + w[0];
        }
    }

    // stress takes the mutex n times; inside, it creates a marker file that
    // the Go side creates too while it holds the lock: an overlap makes one
    // of the exclusive creates fail.
    static String stress(int n, Path marker) throws Exception {
        for (int i = 0; i < n; i++) {
            mutex.acquire();
            try {
                Files.createFile(marker);
            } catch (FileAlreadyExistsException e) {
                mutex.release();
                return "stress FAIL overlap at round " + i;
            }
            Thread.sleep(1);
            Files.delete(marker);
            mutex.release();
        }
        return "stress ok " + n;
    }
}
