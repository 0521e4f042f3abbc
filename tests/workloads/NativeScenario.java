/*
 * NativeScenario - sets up one production-incident shape of JVM native
 * memory, then reports its own ground truth, so that tests can hold
 * memtrimd's figures against what the program knows it holds.
 *
 * Usage: java NativeScenario --scenario NAME --ready-file PATH [options]
 *
 *   baseline        nothing (the control other scenarios are compared with)
 *   readall         --threads T --mib M: a pool of T threads each does
 *                   Files.readAllBytes of one M MiB file; each thread keeps a
 *                   temporary direct buffer of M MiB in sun.nio.ch.Util's
 *                   cache (in the "direct" pool on 17, outside it on 24+)
 *   direct          --buffers N --mib H: N direct buffers of H MiB in all,
 *                   every page written, held
 *   mapped          --mib F --dir D: a F MiB file mapped read-only and every
 *                   page read (file-backed pages, not native memory)
 *   ffm             --mib F: Arena.ofShared().allocate(F MiB), filled (22+;
 *                   called by reflection so this compiles for release 17)
 *   outside         --mib B --jni-lib PATH: a JNI library mallocs B bytes in
 *                   64 KiB chunks and writes every page (memory NMT cannot see)
 *   untouched_heap  nothing: run it with -Xms1g -Xmx1g (committed, untouched)
 *   churn           --threads K --mib S --pause-ms P: K threads allocate and
 *                   drop S MiB direct buffers without end (under a low
 *                   MaxDirectMemorySize, Bits.reserveMemory calls System.gc())
 *
 * Truth: `key=value` lines (every BufferPoolMXBean as pool.<name>.count,
 * .total_capacity and .memory_used; runtime.max_memory/total_memory/
 * free_memory; held.* for what the scenario deliberately holds; churn.* for
 * allocations and OutOfMemoryErrors seen). Written to the ready file once set
 * up, then to <ready>.truth whenever <ready>.ask holds a new number (the
 * truth then says request=<that number>), and for churn also once a second.
 * Every GarbageCollectorMXBean's count and time are in it too (gc.<name>.*).
 * Every write is a new file renamed over the old one. The control files are
 * read and written with java.io streams: NIO reads of heap arrays would put
 * temporary direct buffers of this program's own into the figures.
 */

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;

public final class NativeScenario {
    private static final long MIB = 1L << 20;
    private static final int PAGE = 4096;
    // What the scenario holds stays reachable from here until the process ends.
    private static final List<Object> HELD = new ArrayList<>();
    private static final StringBuilder HELD_FACTS = new StringBuilder();
    private static final AtomicLong ALLOCATIONS = new AtomicLong();
    private static final AtomicLong OOM_ERRORS = new AtomicLong();
    private static String scenario = "baseline";

    private NativeScenario() {}

    // In the library given with --jni-lib (tests/workloads/scenario_jni.c).
    private static native long mallocChunks(long bytes, int chunk);

    public static void main(String[] args) throws Exception {
        String ready = null;
        String dir = System.getProperty("java.io.tmpdir");
        String jniLib = null;
        int threads = 4;
        int buffers = 1;
        long mib = 16;
        int pauseMs = 10;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--scenario": scenario = args[++i]; break;
                case "--ready-file": ready = args[++i]; break;
                case "--dir": dir = args[++i]; break;
                case "--jni-lib": jniLib = args[++i]; break;
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--buffers": buffers = Integer.parseInt(args[++i]); break;
                case "--mib": mib = Long.parseLong(args[++i]); break;
                case "--pause-ms": pauseMs = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (ready == null) throw new IllegalArgumentException("--ready-file is required");
        switch (scenario) {
            case "baseline":
            case "untouched_heap":
                break;
            case "readall": readAll(Paths.get(dir), threads, mib); break;
            case "direct": direct(buffers, mib); break;
            case "mapped": mapped(Paths.get(dir), mib); break;
            case "ffm": ffm(mib); break;
            case "outside": outside(jniLib, mib); break;
            case "churn": churn(threads, mib, pauseMs); break;
            default: throw new IllegalArgumentException("unknown scenario " + scenario);
        }
        writeTruth(ready, "0");
        serveTruth(ready);
    }

    private static void held(String key, long value) {
        HELD_FACTS.append("held.").append(key).append('=').append(value).append('\n');
    }

    // A file of `mib` MiB written with java.io (no NIO temporary buffers).
    private static Path dataFile(Path dir, long mib) throws IOException {
        Path data = Files.createTempFile(dir, "native-scenario-" + scenario, ".bin");
        data.toFile().deleteOnExit();
        byte[] block = new byte[(int) MIB];
        new Random(42).nextBytes(block);
        try (OutputStream out = new FileOutputStream(data.toFile())) {
            for (long i = 0; i < mib; i++) out.write(block);
        }
        return data;
    }

    private static void readAll(Path dir, int threads, long mib) throws Exception {
        Path data = dataFile(dir, mib);
        // A fixed pool starts one thread per task until it is full, so each
        // task runs on a thread of its own, and the threads (with their
        // cached buffers) live as long as the pool.
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        HELD.add(pool);
        List<Future<Integer>> reads = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            reads.add(pool.submit(() -> Files.readAllBytes(data).length));
        }
        long total = 0;
        for (Future<Integer> f : reads) total += f.get();
        if (total != threads * mib * MIB) throw new IllegalStateException("short read");
        held("read_threads", threads);
        held("read_bytes", mib * MIB);
        held("temp_cache_bytes", threads * mib * MIB);
    }

    private static void direct(int buffers, long mib) {
        long total = mib * MIB;
        long each = total / buffers;
        for (int i = 0; i < buffers; i++) {
            long size = i == buffers - 1 ? total - each * (buffers - 1) : each;
            ByteBuffer b = ByteBuffer.allocateDirect((int) size);
            for (int at = 0; at < b.capacity(); at += PAGE) b.put(at, (byte) 1);
            HELD.add(b);
        }
        held("direct_buffers", buffers);
        held("direct_bytes", total);
    }

    private static void mapped(Path dir, long mib) throws IOException {
        Path data = dataFile(dir, mib);
        long sum = 0;
        try (FileChannel ch = FileChannel.open(data, StandardOpenOption.READ)) {
            MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_ONLY, 0, mib * MIB);
            for (int at = 0; at < map.capacity(); at += PAGE) sum += map.get(at);
            HELD.add(map);
        }
        HELD.add(sum);
        held("mapped_bytes", mib * MIB);
    }

    private static void ffm(long mib) throws Exception {
        Class<?> arenaClass;
        try {
            arenaClass = Class.forName("java.lang.foreign.Arena");
        } catch (ClassNotFoundException e) {
            System.err.println("ffm: java.lang.foreign is not in this JDK");
            System.exit(3);
            return;
        }
        Object arena = arenaClass.getMethod("ofShared").invoke(null);
        Object segment = arenaClass.getMethod("allocate", long.class).invoke(arena, mib * MIB);
        Class.forName("java.lang.foreign.MemorySegment")
                .getMethod("fill", byte.class)
                .invoke(segment, (byte) 1);
        HELD.add(arena);
        HELD.add(segment);
        held("ffm_bytes", mib * MIB);
    }

    private static void outside(String jniLib, long mib) {
        if (jniLib == null) throw new IllegalArgumentException("outside needs --jni-lib");
        System.load(jniLib);
        long got = mallocChunks(mib * MIB, 64 * 1024);
        if (got != mib * MIB) throw new IllegalStateException("malloc failed after " + got);
        held("outside_nmt_bytes", got);
    }

    private static void churn(int threads, long mib, int pauseMs) {
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                for (;;) {
                    try {
                        ByteBuffer b = ByteBuffer.allocateDirect((int) (mib * MIB));
                        b.put(0, (byte) 1);
                        ALLOCATIONS.incrementAndGet();
                    } catch (OutOfMemoryError e) {
                        OOM_ERRORS.incrementAndGet();
                    }
                    try {
                        if (pauseMs > 0) Thread.sleep(pauseMs);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "churn-" + t);
            th.setDaemon(true);
            th.start();
        }
        held("churn_threads", threads);
        held("churn_buffer_bytes", mib * MIB);
    }

    // Answers each new number in <ready>.ask with <ready>.truth; churn also
    // re-writes the truth once a second (its figures move).
    private static void serveTruth(String ready) throws Exception {
        File ask = new File(ready + ".ask");
        String answered = "";
        long lastWrite = System.nanoTime();
        for (;;) {
            Thread.sleep(20);
            String request = ask.exists() ? readSmall(ask) : "";
            boolean asked = !request.isEmpty() && !request.equals(answered);
            boolean tick = scenario.equals("churn") && System.nanoTime() - lastWrite > 1_000_000_000L;
            if (asked || tick) {
                if (asked) answered = request;
                writeTruth(ready + ".truth", answered.isEmpty() ? "0" : answered);
                lastWrite = System.nanoTime();
            }
        }
    }

    private static String readSmall(File f) {
        try (InputStream in = new FileInputStream(f)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] b = new byte[64];
            for (int n; (n = in.read(b)) > 0;) out.write(b, 0, n);
            return out.toString(StandardCharsets.US_ASCII).trim();
        } catch (IOException e) {
            return "";  // being replaced right now: asked again next time
        }
    }

    private static void writeTruth(String path, String request) throws IOException {
        StringBuilder s = new StringBuilder();
        s.append("scenario=").append(scenario).append('\n');
        s.append("request=").append(request).append('\n');
        s.append("pid=").append(ProcessHandle.current().pid()).append('\n');
        s.append("java.feature=").append(Runtime.version().feature()).append('\n');
        for (BufferPoolMXBean p : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            String k = "pool." + p.getName();
            s.append(k).append(".count=").append(p.getCount()).append('\n');
            s.append(k).append(".total_capacity=").append(p.getTotalCapacity()).append('\n');
            s.append(k).append(".memory_used=").append(p.getMemoryUsed()).append('\n');
        }
        for (GarbageCollectorMXBean g : ManagementFactory.getGarbageCollectorMXBeans()) {
            s.append("gc.").append(g.getName()).append(".count=").append(g.getCollectionCount())
                    .append('\n');
            s.append("gc.").append(g.getName()).append(".time_ms=").append(g.getCollectionTime())
                    .append('\n');
        }
        s.append("uptime_ms=").append(ManagementFactory.getRuntimeMXBean().getUptime()).append('\n');
        Runtime rt = Runtime.getRuntime();
        s.append("runtime.max_memory=").append(rt.maxMemory()).append('\n');
        s.append("runtime.total_memory=").append(rt.totalMemory()).append('\n');
        s.append("runtime.free_memory=").append(rt.freeMemory()).append('\n');
        String cached = System.getProperty("jdk.nio.maxCachedBufferSize");
        s.append("property.jdk.nio.maxCachedBufferSize=").append(cached == null ? "" : cached)
                .append('\n');
        s.append(HELD_FACTS);
        if (scenario.equals("churn")) {
            s.append("churn.allocations=").append(ALLOCATIONS.get()).append('\n');
            s.append("churn.oom_errors=").append(OOM_ERRORS.get()).append('\n');
        }
        File tmp = new File(path + ".tmp");
        try (OutputStream out = new FileOutputStream(tmp)) {
            out.write(s.toString().getBytes(StandardCharsets.US_ASCII));
        }
        if (!tmp.renameTo(new File(path))) throw new IOException("rename to " + path + " failed");
    }
}
