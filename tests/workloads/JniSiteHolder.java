/*
 * JniSiteHolder - a JVM whose native allocation sites are known: the JNI
 * library libsite_holder_jni.so (tests/workloads/site_holder_jni.c) holds
 * 200, 50 and 10 units of malloc'd, written memory in jni_hold_200,
 * jni_hold_50 and jni_hold_10, while threads churn short-lived allocations
 * in jni_churn. The JVM twin of tests/workloads/site_holder.c, for the
 * allocation sampler's accuracy tests (issue 25).
 *
 * Usage: java -Djava.library.path=<dir of libsite_holder_jni.so> JniSiteHolder
 *            [--unit BYTES] [--block BYTES] [--churn-threads N]
 *            [--churn-rounds R] [--churn-pause-ms P] [--hold-now]
 *
 *   --unit           bytes of a unit (default 1 MiB)
 *   --block          bytes of each malloc'd block of a site (default 1 MiB;
 *                    a site's last block is smaller when the block size
 *                    does not divide it)
 *   --churn-threads  Java threads calling jni_churn (default 2; 0: none)
 *   --churn-rounds   allocations per jni_churn call (default 256: 1.8 MiB
 *                    a call, 7.4 KiB a block, on average)
 *   --churn-pause-ms sleep between two calls of a churn thread (default 5:
 *                    the two threads then took 20-25 % of a core; with 1 ms,
 *                    40-65 %, most of it page faults after glibc trimmed
 *                    the freed top of their arenas)
 *   --hold-now       hold at once instead of waiting for "hold" (memory
 *                    taken before a sampler could be turned on)
 *
 * Protocol (stdout, one line each, flushed after "pid", "ready" and "freed50"):
 *   pid <n>                          once started, the churn running
 * then, on the line "hold" on stdin (or at once with --hold-now):
 *   function <name> <0x hex>         jni_hold_200, jni_hold_50, jni_hold_10,
 *                                    jni_churn: each function's address in
 *                                    this process
 *   library <path>                   the library's path as the dynamic
 *                                    loader has it (its name in maps)
 *   held <name> <bytes> <blocks>     what each hold site holds
 *   ready
 * On "free50": jni_hold_50's blocks are freed, then "freed50". Another line
 * on stdin is ignored (said on stderr). When stdin closes it exits 0; give
 * it a pipe that stays open for as long as it should run.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

public final class JniSiteHolder {
    private static final String[] SITES = {"jni_hold_200", "jni_hold_50", "jni_hold_10"};
    private static final String[] FUNCTIONS = {
        "jni_hold_200", "jni_hold_50", "jni_hold_10", "jni_churn"
    };

    private JniSiteHolder() {}

    // In libsite_holder_jni.so.
    private static native long hold(int which, long unit, long block);

    private static native int free50();

    private static native long functionAddress(int which);

    private static native String libraryPath();

    private static native long churn(int rounds, long[] state);

    public static void main(String[] args) throws Exception {
        long unit = 1L << 20;
        long block = 1L << 20;
        int churnThreads = 2;
        int churnRounds = 256;
        int churnPauseMs = 5;
        boolean holdNow = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--unit": unit = Long.parseLong(args[++i]); break;
                case "--block": block = Long.parseLong(args[++i]); break;
                case "--churn-threads": churnThreads = Integer.parseInt(args[++i]); break;
                case "--churn-rounds": churnRounds = Integer.parseInt(args[++i]); break;
                case "--churn-pause-ms": churnPauseMs = Integer.parseInt(args[++i]); break;
                case "--hold-now": holdNow = true; break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (unit <= 0 || block <= 0) throw new IllegalArgumentException("--unit and --block > 0");
        System.loadLibrary("site_holder_jni");

        PrintStream out = new PrintStream(System.out, false, StandardCharsets.US_ASCII);
        for (int t = 0; t < churnThreads; t++) startChurn(t, churnRounds, churnPauseMs);
        out.println("pid " + ProcessHandle.current().pid());
        out.flush();

        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        boolean held = false;
        if (holdNow) {
            holdAll(out, unit, block);
            held = true;
        }
        for (String line; (line = in.readLine()) != null;) {
            switch (line.trim()) {
                case "hold":
                    if (held) {
                        System.err.println("hold: held already");
                        break;
                    }
                    holdAll(out, unit, block);
                    held = true;
                    break;
                case "free50":
                    free50();
                    out.println("freed50");
                    out.flush();
                    break;
                default:
                    System.err.println("ignored: " + line);
            }
        }
        System.exit(0);  // the churn threads are daemons, but say it plainly
    }

    private static void holdAll(PrintStream out, long unit, long block) {
        long[] bytes = new long[SITES.length];
        for (int i = 0; i < SITES.length; i++) {
            bytes[i] = hold(i, unit, block);
            if (bytes[i] < 0) throw new IllegalStateException(SITES[i] + ": malloc failed");
        }
        for (int i = 0; i < FUNCTIONS.length; i++) {
            out.println("function " + FUNCTIONS[i] + " 0x" + Long.toHexString(functionAddress(i)));
        }
        out.println("library " + libraryPath());
        for (int i = 0; i < SITES.length; i++) {
            long blocks = (bytes[i] + block - 1) / block;
            out.println("held " + SITES[i] + " " + bytes[i] + " " + blocks);
        }
        out.println("ready");
        out.flush();
    }

    // A daemon thread that calls jni_churn without end: allocations that
    // are all freed again within the call.
    private static void startChurn(int index, int rounds, int pauseMs) {
        Thread t = new Thread(() -> {
            long[] state = {0x9e3779b97f4a7c15L * (index + 1)};
            for (;;) {
                churn(rounds, state);
                if (pauseMs > 0) {
                    try {
                        Thread.sleep(pauseMs);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
        }, "churn-" + index);
        t.setDaemon(true);
        t.start();
    }
}
