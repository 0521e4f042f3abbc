/*
 * DirectBufferRead - reproduces the growth of the JDK's per-thread temporary
 * direct buffer cache (sun.nio.ch.Util).
 *
 * Usage: java DirectBufferRead --threads N --mib M --ready-file PATH [--dir DIR] [--tag S]
 *                               [--grow-file PATH]
 *
 * Writes one file of M MiB, then a fixed pool of N threads each reads it once
 * through Channels.newInputStream(FileChannel).readAllBytes(). On JDK 18+ that
 * read asks the channel for the whole remaining size at once, so each thread
 * caches a temporary direct buffer of about M MiB (NMT category "Other")
 * unless -Djdk.nio.maxCachedBufferSize bounds it. The pool's threads stay
 * alive (the cache is per thread) and the process idles until killed.
 *
 * With --grow-file, once PATH exists every pool thread reads a file of 2M MiB
 * (each on its own thread: they wait for each other first), so the cache
 * grows to about N x 2M MiB; then PATH.done is written (atomically) with
 * "cache_bytes=<N x 2M MiB>".
 */

import java.io.InputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

public final class DirectBufferRead {
    private DirectBufferRead() {}

    public static void main(String[] args) throws Exception {
        int threads = 8;
        int mib = 4;
        String ready = null;
        String dir = System.getProperty("java.io.tmpdir");
        String grow = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--mib": mib = Integer.parseInt(args[++i]); break;
                case "--ready-file": ready = args[++i]; break;
                case "--dir": dir = args[++i]; break;
                case "--tag": i++; break;
                case "--grow-file": grow = args[++i]; break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        Path data = dataFile(dir, mib);
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Integer>> reads = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            reads.add(pool.submit(() -> {
                try (FileChannel ch = FileChannel.open(data);
                     InputStream in = Channels.newInputStream(ch)) {
                    return in.readAllBytes().length;
                }
            }));
        }
        long total = 0;
        for (Future<Integer> f : reads) total += f.get();
        if (total != (long) threads * mib * (1 << 20)) throw new IllegalStateException("short read");
        if (ready != null) {
            Path tmp = Paths.get(ready + ".tmp");
            Files.writeString(tmp, ProcessHandle.current().pid() + "\n");
            Files.move(tmp, Paths.get(ready), StandardCopyOption.ATOMIC_MOVE);
        }
        if (grow != null) {
            Path trigger = Paths.get(grow);
            while (!Files.exists(trigger)) Thread.sleep(50);
            Path larger = dataFile(dir, 2 * mib);
            CountDownLatch started = new CountDownLatch(threads);
            List<Future<Integer>> more = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                more.add(pool.submit(() -> {
                    started.countDown();
                    started.await();  // one read per pool thread
                    try (FileChannel ch = FileChannel.open(larger);
                         InputStream in = Channels.newInputStream(ch)) {
                        return in.readAllBytes().length;
                    }
                }));
            }
            long grown = 0;
            for (Future<Integer> f : more) grown += f.get();
            Path tmp = Paths.get(grow + ".done.tmp");
            Files.writeString(tmp, "cache_bytes=" + grown + "\n");
            Files.move(tmp, Paths.get(grow + ".done"), StandardCopyOption.ATOMIC_MOVE);
        }
        // Keep the pool (and its threads' cached buffers) alive.
        Thread.sleep(Long.MAX_VALUE);
    }

    // A file of `mib` MiB of random bytes, written 1 MiB at a time (the main thread caches a
    // temporary buffer of 1 MiB, as before the pool reads).
    private static Path dataFile(String dir, int mib) throws Exception {
        Path data = Files.createTempFile(Paths.get(dir), "direct-buffer-read", ".bin");
        data.toFile().deleteOnExit();
        byte[] block = new byte[1 << 20];
        new Random(42).nextBytes(block);
        try (var out = Files.newOutputStream(data)) {
            for (int i = 0; i < mib; i++) out.write(block);
        }
        return data;
    }
}
