/*
 * JavaFramesStress - everything that can go on in a JVM while memtrimd's agent walks the Java
 * frames of sampled allocations (AsyncGetCallTrace) and names them (JVMTI), at once, for a
 * given number of seconds (the Java frames stress test, issue 34):
 *
 *   workers (--threads, 3 by default), each round: a class loader of its own defines a fresh
 *     copy of JavaFramesStressPayload (below), whose run() allocates native memory (zlib:
 *     Deflater and Inflater made and ended, one Deflater left to its Cleaner) and drives a
 *     call site of its own through receivers that change type: monomorphic long enough to be
 *     compiled, then another type (an uncommon trap: deoptimisation), then many
 *     (megamorphic), with native allocations inside the callees. The loader is dropped at
 *     the round's end; every 16th round calls System.gc(), which unloads the dropped
 *     loaders' classes, so the sampled stacks hold method ids of classes unloaded since.
 *   direct buffers: ByteBuffer.allocateDirect (4 KiB to 256 KiB, Unsafe.allocateMemory ->
 *     os::malloc) dropped at once and freed by their Cleaners after a GC; with a small
 *     -XX:MaxDirectMemorySize, reservations that do not fit call System.gc() themselves
 *     (and one still not served after that is an OutOfMemoryError: counted, direct_ooms).
 *   thread churn: platform threads started and ended continuously, each making and ending a
 *     Deflater (and the JVM's own mallocs for its thread).
 *   virtual threads (JDK 21 and later, reached through reflection: compiled for 17): batches
 *     of virtual threads, each allocating zlib memory in allocateOnVirtualThread, yielding
 *     (unmounted and mounted again) in between.
 *
 * Usage: java JavaFramesStress --seconds N [--threads N] [--ready-file PATH] [--go-on-stdin]
 *
 * The work starts at once. With --ready-file, PATH.base (the pid) is written once every
 * thread runs. With --go-on-stdin the N seconds start at a line "go" on stdin (so a sampler
 * can be turned on under load first); without it, at once. After them every thread is told
 * to stop and joined (at most 30 s each); the counts are printed on stdout as one line of
 * "key=value" words (rounds, loaders, classes_unloaded, deflaters, direct_buffers,
 * direct_ooms, platform_threads, virtual_threads, gcs) and the program exits 0, or 1 when a
 * thread failed or did not stop, 3 when stdin ended or stayed silent for 120 s before "go".
 */

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

public final class JavaFramesStress {
    private JavaFramesStress() {}

    /** What a payload copy does; loaded once, by the application loader. */
    public interface NativeTask {
        long run(int round);
    }

    /** The receivers of a payload's call site: each allocates native memory now and then. */
    public interface Shape {
        long step(long x);
    }

    static final AtomicLong ROUNDS = new AtomicLong();
    public static final AtomicLong DEFLATERS = new AtomicLong();
    static final AtomicLong DIRECT = new AtomicLong();
    static final AtomicLong DIRECT_OOMS = new AtomicLong();
    static final AtomicLong PLATFORM = new AtomicLong();
    static final AtomicLong VIRTUAL = new AtomicLong();
    static final AtomicReference<Throwable> FAILED = new AtomicReference<>();
    static volatile boolean stop;
    // Kept reachable so that the JIT cannot drop the work.
    static volatile long sink;

    private static final byte[] TEXT = text();

    private static byte[] text() {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < 400; ++i) b.append("native frames under Java frames ").append(i).append('\n');
        return b.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** zlib's memory, made and ended: deflateInit2_ and inflateInit2_ malloc, end frees. */
    public static long deflateAndInflate(int level) {
        Deflater d = new Deflater(level);
        byte[] out = new byte[TEXT.length + 64];
        int n;
        try {
            d.setInput(TEXT);
            d.finish();
            n = d.deflate(out);
        } finally {
            d.end();
        }
        Inflater inf = new Inflater();
        try {
            inf.setInput(out, 0, n);
            return n + inf.inflate(new byte[TEXT.length]);
        } catch (DataFormatException e) {
            throw new IllegalStateException(e);
        } finally {
            inf.end();
        }
    }

    static final class Plain implements Shape {
        public long step(long x) { return x * 31 + 7; }
    }

    static final class Shift implements Shape {
        public long step(long x) { return (x << 3) ^ (x >>> 5); }
    }

    // The native allocations inside the call site's callees, one call in 1024 (2048): the
    // counters are shared by the workers unsynchronised, which only blurs the rate.
    static final class Zlib implements Shape {
        private long calls;

        public long step(long x) {
            if ((++calls & 1023) != 0) return x + 1;
            DEFLATERS.incrementAndGet();
            return x + deflateAndInflate(1);
        }
    }

    static final class Direct implements Shape {
        private long calls;

        public long step(long x) {
            if ((++calls & 2047) != 0) return x - 1;
            return x + allocateDirect(8192);
        }
    }

    static final class Mixed implements Shape {
        public long step(long x) { return Long.rotateLeft(x, 7) + 3; }
    }

    /** Receiver sets a payload's call site goes through, in this order. */
    public static final Shape[][] PHASES = {
        {new Plain()}, // monomorphic: compiled with Plain inlined
        {new Zlib()}, // another type: uncommon trap, deoptimisation
        {new Plain(), new Zlib()}, // bimorphic
        {new Plain(), new Shift(), new Zlib(), new Direct(), new Mixed()}, // megamorphic
        {new Direct()},
    };

    /** Defines its own copy of the payload class; every other class from its parent. */
    static final class PayloadLoader extends ClassLoader {
        private final byte[] bytes;

        PayloadLoader(byte[] bytes) {
            super(JavaFramesStress.class.getClassLoader());
            this.bytes = bytes;
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (!name.equals("JavaFramesStressPayload")) return super.loadClass(name, resolve);
            synchronized (getClassLoadingLock(name)) {
                Class<?> c = findLoadedClass(name);
                if (c == null) c = defineClass(name, bytes, 0, bytes.length);
                if (resolve) resolveClass(c);
                return c;
            }
        }
    }

    static void worker(byte[] payload) throws Exception {
        for (int round = 0; !stop; ++round) {
            Class<?> c = new PayloadLoader(payload).loadClass("JavaFramesStressPayload");
            java.lang.reflect.Constructor<?> ctor = c.getDeclaredConstructor();
            ctor.setAccessible(true);
            NativeTask task = (NativeTask) ctor.newInstance();
            sink += task.run(round);
            ROUNDS.incrementAndGet();
            // Drop the loader (task, c, ctor die here), and unload the dropped ones now and
            // then: each System.gc() with class unloading (G1, Parallel, ZGC by default).
            if (round % 16 == 15) System.gc();
        }
    }

    /**
     * A direct buffer of `bytes`, dropped. The JVM's answer to a full pool is part of the
     * load: a reservation that does not fit calls System.gc() and waits for the Cleaners,
     * and gives up with an OutOfMemoryError after about half a second (java.nio.Bits), which
     * a thread starved by the others' reservations can meet: counted, not a failure.
     */
    static int allocateDirect(int bytes) {
        try {
            ByteBuffer b = ByteBuffer.allocateDirect(bytes);
            b.put(0, (byte) 1);
            DIRECT.incrementAndGet();
            return b.capacity();
        } catch (OutOfMemoryError e) {
            if (!String.valueOf(e.getMessage()).contains("direct buffer memory")) throw e;
            DIRECT_OOMS.incrementAndGet();
            return 0;
        }
    }

    static void directBuffers() {
        ThreadLocalRandom r = ThreadLocalRandom.current();
        while (!stop) sink += allocateDirect(4096 << r.nextInt(7));
    }

    /** Runs on short platform threads: its own frame in the sampled stacks. */
    static void allocateOnShortThread() {
        sink += deflateAndInflate(6);
        DEFLATERS.incrementAndGet();
    }

    static void threadChurn() throws InterruptedException {
        List<Thread> batch = new ArrayList<>();
        while (!stop) {
            for (int i = 0; i < 4; ++i) {
                Thread t = new Thread(JavaFramesStress::allocateOnShortThread, "short-" + PLATFORM.get());
                t.start();
                batch.add(t);
                PLATFORM.incrementAndGet();
            }
            for (Thread t : batch) t.join();
            batch.clear();
        }
    }

    /** Runs on virtual threads: the frames their sampled allocations show (docs/java-frames.md). */
    static void allocateOnVirtualThread() {
        sink += deflateAndInflate(1);
        Thread.yield(); // unmounted, and mounted again (maybe on another carrier)
        sink += deflateAndInflate(2);
        DEFLATERS.addAndGet(2);
    }

    static final class OnVirtualThread implements Runnable {
        public void run() {
            allocateOnVirtualThread();
        }
    }

    static void virtualThreads(Method startVirtualThread) throws Exception {
        List<Thread> batch = new ArrayList<>();
        while (!stop) {
            for (int i = 0; i < 32; ++i) {
                batch.add((Thread) startVirtualThread.invoke(null, new OnVirtualThread()));
                VIRTUAL.incrementAndGet();
            }
            for (Thread t : batch) t.join();
            batch.clear();
        }
    }

    interface Body {
        void run() throws Exception;
    }

    static Thread start(String name, Body body) {
        Thread t = new Thread(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                FAILED.compareAndSet(null, e);
            }
        }, name);
        t.start();
        return t;
    }

    public static void main(String[] args) throws Exception {
        int seconds = -1;
        int workers = 3;
        String ready = null;
        boolean goOnStdin = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--seconds": seconds = Integer.parseInt(args[++i]); break;
                case "--threads": workers = Integer.parseInt(args[++i]); break;
                case "--ready-file": ready = args[++i]; break;
                case "--go-on-stdin": goOnStdin = true; break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (seconds < 0) throw new IllegalArgumentException("--seconds is required");
        byte[] payload;
        try (InputStream in = JavaFramesStress.class.getResourceAsStream("/JavaFramesStressPayload.class")) {
            if (in == null) throw new IOException("JavaFramesStressPayload.class not on the class path");
            payload = in.readAllBytes();
        }
        // Thread.startVirtualThread exists from JDK 21 (a preview in 19 and 20: left out).
        Method startVirtual = null;
        if (Runtime.version().feature() >= 21) {
            startVirtual = Thread.class.getMethod("startVirtualThread", Runnable.class);
        }
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < workers; ++i) threads.add(start("worker-" + i, () -> worker(payload)));
        threads.add(start("direct", JavaFramesStress::directBuffers));
        threads.add(start("thread-churn", JavaFramesStress::threadChurn));
        final Method vt = startVirtual;
        if (vt != null) threads.add(start("virtual-threads", () -> virtualThreads(vt)));
        if (ready != null) writeAtomically(ready + ".base", Long.toString(ProcessHandle.current().pid()));

        int exit = 0;
        if (goOnStdin && !waitForGo()) {
            exit = 3;
        } else {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            for (long left; (left = end - System.nanoTime()) > 0 && FAILED.get() == null; ) {
                TimeUnit.NANOSECONDS.sleep(Math.min(left, TimeUnit.MILLISECONDS.toNanos(100)));
            }
        }
        stop = true;
        for (Thread t : threads) {
            t.join(30_000);
            if (t.isAlive()) {
                System.err.println("JavaFramesStress: thread " + t.getName() + " did not stop");
                exit = exit == 0 ? 1 : exit;
            }
        }
        if (FAILED.get() != null) {
            FAILED.get().printStackTrace();
            exit = exit == 0 ? 1 : exit;
        }
        long gcs = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcs += Math.max(0, gc.getCollectionCount());
        }
        System.out.println("rounds=" + ROUNDS.get() + " loaders=" + ROUNDS.get()
                + " classes_unloaded=" + ManagementFactory.getClassLoadingMXBean().getUnloadedClassCount()
                + " deflaters=" + DEFLATERS.get() + " direct_buffers=" + DIRECT.get()
                + " direct_ooms=" + DIRECT_OOMS.get()
                + " platform_threads=" + PLATFORM.get() + " virtual_threads=" + VIRTUAL.get()
                + " gcs=" + gcs);
        System.out.flush();
        System.exit(exit);
    }

    /** True at a line "go"; false at the end of stdin or after 120 s of silence. */
    private static boolean waitForGo() throws Exception {
        AtomicReference<Boolean> go = new AtomicReference<>();
        Thread reader = new Thread(() -> {
            try {
                BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                for (String line; (line = in.readLine()) != null; ) {
                    if (line.equals("go")) {
                        go.set(true);
                        return;
                    }
                }
            } catch (IOException e) {
                // as the end of stdin
            }
            go.set(false);
        }, "stdin");
        reader.setDaemon(true);
        reader.start();
        reader.join(120_000);
        return Boolean.TRUE.equals(go.get());
    }

    private static void writeAtomically(String path, String text) throws IOException {
        String tmp = path + ".tmp";
        try (FileOutputStream out = new FileOutputStream(tmp)) {
            out.write((text + "\n").getBytes(StandardCharsets.UTF_8));
        }
        if (!new java.io.File(tmp).renameTo(new java.io.File(path))) {
            throw new IOException("rename " + tmp);
        }
    }
}

/*
 * Defined again by every round's PayloadLoader: a new class each time, with new methods (new
 * method ids), a call site of its own with fresh type profiles and trap counts, unloaded with
 * its loader. Its run() is the first Java frame outside the JDK in its sampled stacks.
 */
final class JavaFramesStressPayload implements JavaFramesStress.NativeTask {
    // Left to its Cleaner: ended after this class's loader became unreachable.
    private Deflater held;

    JavaFramesStressPayload() {}

    @Override
    public long run(int round) {
        held = new Deflater(1 + round % 9);
        long x = round;
        // Each phase long enough for the tiered compilers (OSR) to compile the loop with the
        // phase's receivers, then the next phase's types trap and deoptimise it.
        for (JavaFramesStress.Shape[] phase : JavaFramesStress.PHASES) {
            x = drive(phase, x, 40_000);
        }
        JavaFramesStress.DEFLATERS.addAndGet(2);
        return x + JavaFramesStress.deflateAndInflate(1 + round % 9) + held.getTotalIn();
    }

    private static long drive(JavaFramesStress.Shape[] shapes, long x, int n) {
        for (int i = 0; i < n; ++i) x = shapes[i % shapes.length].step(x);
        return x;
    }
}
