/*
 * DeflaterRounds - a JVM whose threads do nothing but native-allocating JDK
 * work, for bench/java_frames_overhead.sh: each round makes a Deflater,
 * compresses 4 KiB, ends it, and every 16th round allocates and drops a
 * 64 KiB direct buffer, at the bottom of a call chain --depth frames deep
 * (a real application's Java stack above its allocations: what the Java
 * frame walk has to walk).
 *
 * Usage: java DeflaterRounds --threads N --seconds S --go-file PATH
 *                           --ready-file PATH [--depth D]
 *
 * Writes its pid to PATH(ready) once started, waits for PATH(go) to exist,
 * then runs S seconds and prints "rounds_per_second=<n>".
 */

import java.io.File;
import java.io.FileOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.Deflater;

public final class DeflaterRounds {
    private static final AtomicLong ROUNDS = new AtomicLong();
    private static volatile long sink;

    private DeflaterRounds() {}

    public static void main(String[] args) throws Exception {
        int threads = 2;
        int seconds = 10;
        int depth = 20;
        String go = null;
        String ready = null;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--seconds": seconds = Integer.parseInt(args[++i]); break;
                case "--depth": depth = Integer.parseInt(args[++i]); break;
                case "--go-file": go = args[++i]; break;
                case "--ready-file": ready = args[++i]; break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (go == null || ready == null) throw new IllegalArgumentException("--go-file and --ready-file");
        try (FileOutputStream out = new FileOutputStream(ready + ".tmp")) {
            out.write(Long.toString(ProcessHandle.current().pid()).getBytes(StandardCharsets.UTF_8));
        }
        if (!new File(ready + ".tmp").renameTo(new File(ready))) throw new IllegalStateException("rename");
        File goFile = new File(go);
        while (!goFile.exists()) Thread.sleep(10);

        final long end = System.nanoTime() + seconds * 1_000_000_000L;
        final int frames = depth;
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; ++t) {
            workers[t] = new Thread(() -> down(frames, end));
            workers[t].start();
        }
        for (Thread w : workers) w.join();
        System.out.println("rounds_per_second=" + ROUNDS.get() / seconds);
    }

    // The call chain: `frames` Java frames above the rounds.
    private static void down(int frames, long end) {
        if (frames > 0) {
            down(frames - 1, end);
            return;
        }
        rounds(end);
    }

    private static void rounds(long end) {
        byte[] input = new byte[4096];
        for (int i = 0; i < input.length; i += 3) input[i] = (byte) i;
        byte[] output = new byte[8192];
        long n = 0;
        while (System.nanoTime() < end) {
            Deflater d = new Deflater(1);
            d.setInput(input);
            d.finish();
            sink += d.deflate(output);
            d.end();
            if ((n & 15) == 0) sink += ByteBuffer.allocateDirect(64 * 1024).capacity();
            ++n;
        }
        ROUNDS.addAndGet(n);
    }
}
