/*
 * JavaFramesHolder - native memory held through Java methods that memtrimd's
 * sampler must tell apart by their Java frames: two methods hold Deflaters
 * through the same native path (Deflater.<init> -> Deflater.init -> zlib),
 * in a known ratio, a third holds direct buffers (Unsafe.allocateMemory
 * -> the JVM's os::malloc), and a fourth, run by threads of their own,
 * fills the temporary direct buffer cache (sun.nio.ch.Util) with its
 * heap-buffer channel reads.
 *
 * Usage: java JavaFramesHolder --ready-file PATH [--a N] [--b N] [--direct-mib N]
 *                              [--zlib-late] [--read-file FILE [--readers N]]
 *
 * Loads zlib (one Deflater made and ended; not with --zlib-late, where a JDK
 * that loads it lazily loads it at the first Deflater held), writes
 * PATH.base (its pid), then waits for a line "hold" on
 * stdin (so a sampler can be turned on first); then holdDeflatersA makes N
 * (default 240) Deflaters, holdDeflatersB N (default 120) and holdDirect N
 * (default 32) direct buffers of 1 MiB, all kept reachable, none ended;
 * with --read-file, N (default 8) threads each readWithHeapBuffers (read
 * FILE whole through a FileChannel into a heap buffer of FILE's size) and
 * then wait: each thread's cache keeps a direct buffer of FILE's size (the
 * one its read went through) while it lives.
 * Then it writes PATH ("a=<n> b=<n> direct_mib=<n> readers=<n>") and idles
 * until stdin closes, when it exits 0.
 */

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.zip.Deflater;

public final class JavaFramesHolder {
    private static final List<Object> HELD = new ArrayList<>();

    private JavaFramesHolder() {}

    static void holdDeflatersA(int n) {
        for (int i = 0; i < n; ++i) HELD.add(new Deflater(6));
    }

    static void holdDeflatersB(int n) {
        for (int i = 0; i < n; ++i) HELD.add(new Deflater(6));
    }

    static void holdDirect(int mib) {
        for (int i = 0; i < mib; ++i) HELD.add(ByteBuffer.allocateDirect(1 << 20));
    }

    // Reads `file` whole into a heap buffer of its size: the read goes
    // through a temporary direct buffer of that size (IOUtil.read ->
    // Util.getTemporaryDirectBuffer), which the calling thread's cache keeps.
    // A method of its own, so that the site is named by it, not by a lambda.
    static void readWithHeapBuffers(String file) throws IOException {
        try (FileChannel ch = FileChannel.open(Path.of(file), StandardOpenOption.READ)) {
            ByteBuffer heap = ByteBuffer.allocate((int) ch.size());
            while (heap.hasRemaining() && ch.read(heap) >= 0) {
                // a regular file reads whole in one call, as a rule
            }
        }
    }

    // Starts `threads` threads that each readWithHeapBuffers(file) and then
    // wait for `done`, their caches kept; returns when all have read.
    static void startReaders(String file, int threads, CountDownLatch done) throws Exception {
        CountDownLatch read = new CountDownLatch(threads);
        List<Throwable> failed = new ArrayList<>();
        for (int t = 0; t < threads; ++t) {
            Thread reader = new Thread(() -> {
                try {
                    readWithHeapBuffers(file);
                } catch (Throwable e) {
                    synchronized (failed) {
                        failed.add(e);
                    }
                }
                read.countDown();
                try {
                    done.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "reader-" + t);
            reader.setDaemon(true);
            reader.start();
        }
        read.await();
        synchronized (failed) {
            if (!failed.isEmpty()) throw new IOException("a reader failed", failed.get(0));
        }
    }

    public static void main(String[] args) throws Exception {
        int a = 240;
        int b = 120;
        int direct = 32;
        String ready = null;
        boolean zlibLate = false;
        String readFile = null;
        int readers = 8;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--a": a = Integer.parseInt(args[++i]); break;
                case "--b": b = Integer.parseInt(args[++i]); break;
                case "--direct-mib": direct = Integer.parseInt(args[++i]); break;
                case "--ready-file": ready = args[++i]; break;
                case "--zlib-late": zlibLate = true; break;
                case "--read-file": readFile = args[++i]; break;
                case "--readers": readers = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (ready == null) throw new IllegalArgumentException("--ready-file is required");
        // zlib's library loaded before a sampler is turned on (a JDK that
        // loads it lazily, as Temurin 25 does, loads it here); with
        // --zlib-late at the first Deflater held, while sampling.
        if (!zlibLate) new Deflater(6).end();
        writeAtomically(ready + ".base", Long.toString(ProcessHandle.current().pid()));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null && !line.equals("hold")) {
            // anything else is ignored
        }
        if (line == null) System.exit(0);
        holdDeflatersA(a);
        holdDeflatersB(b);
        holdDirect(direct);
        // Released when stdin closes: the readers (and their caches) live
        // until then. Made only with readers, so that without them the
        // holder runs as it did before they were added: with the latch made
        // at class initialisation, the --zlib-late test on Temurin 25 saw
        // some or none of A's Deflaters in 3 of about 30 runs (why is not
        // known; without it, none of 75).
        CountDownLatch done = readFile != null ? new CountDownLatch(1) : null;
        if (readFile != null) startReaders(readFile, readers, done);
        writeAtomically(ready, "a=" + a + " b=" + b + " direct_mib=" + direct + " readers="
                + (readFile != null ? readers : 0));
        while (in.readLine() != null) {
            // held until stdin closes
        }
        if (done != null) done.countDown();
        System.exit(HELD.size() == a + b + direct ? 0 : 1);
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
