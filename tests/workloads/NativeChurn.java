/*
 * NativeChurn - a JVM workload that churns native (malloc) memory from many threads.
 *
 * Usage: java NativeChurn [--threads N] [--seconds S] [--ready-file PATH] [--tag STRING] [--quiet]
 *
 *   --threads N        worker threads (default 12)
 *   --seconds S        churn for S seconds; 0 (default) runs a fixed number of rounds once
 *   --ready-file PATH  after the churn, write "<pid>\n" to PATH.tmp and rename it to PATH
 *   --tag STRING       ignored; lets tests find this process by its command line
 *   --quiet            no progress output
 *
 * Each worker repeatedly creates java.util.zip.Deflater and Inflater instances (their zlib
 * state is malloc'd by the JVM outside the Java heap), compresses and inflates a few hundred
 * KiB of random-ish data, and calls end(). A few deflaters per thread stay open for a while
 * and are ended out of order, and direct ByteBuffers are allocated and dropped, so native
 * allocations from many threads interleave in glibc's arenas. After the churn the process
 * writes the ready file and idles (sleeping) until it is killed.
 */

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

public final class NativeChurn {
    private static final int DATA_SIZE = 256 * 1024;
    /** Rounds per thread when --seconds is 0. */
    private static final int ROUNDS_ONCE = 40;
    /** Deflaters each thread keeps open across rounds. */
    private static final int OPEN_DEFLATERS = 4;
    /** Direct buffers each thread keeps referenced across rounds. */
    private static final int DIRECT_BUFFERS = 8;

    private static final String[] WORDS = {
        "arena", "heap", "malloc", "free", "trim", "resident", "page", "mmap", "thread",
        "chunk", "bin", "fastbin", "tcache", "fragment", "native", "memory", "cgroup", "limit",
    };

    private static final AtomicLong ROUNDS_DONE = new AtomicLong();
    private static final AtomicLong BYTES_COMPRESSED = new AtomicLong();

    private NativeChurn() {}

    public static void main(String[] args) throws Exception {
        int threads = 12;
        long seconds = 0;
        String readyFile = null;
        boolean quiet = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--threads":
                    threads = parseInt(args, ++i, 1, 4096);
                    break;
                case "--seconds":
                    seconds = parseInt(args, ++i, 0, Integer.MAX_VALUE);
                    break;
                case "--ready-file":
                    readyFile = value(args, ++i);
                    break;
                case "--tag":
                    value(args, ++i);
                    break;
                case "--quiet":
                    quiet = true;
                    break;
                default:
                    System.err.println("NativeChurn: unknown argument '" + args[i] + "'");
                    System.err.println("usage: java NativeChurn [--threads N] [--seconds S]"
                            + " [--ready-file PATH] [--tag STRING] [--quiet]");
                    System.exit(2);
            }
        }

        final long deadline = seconds > 0 ? System.nanoTime() + seconds * 1_000_000_000L : 0;
        Thread[] workers = new Thread[threads];
        Throwable[] failure = new Throwable[1];
        for (int t = 0; t < threads; t++) {
            final int index = t;
            workers[t] = new Thread(() -> {
                try {
                    churn(index, deadline);
                } catch (Throwable e) {
                    synchronized (failure) {
                        failure[0] = e;
                    }
                }
            }, "churn-" + t);
            workers[t].start();
        }
        for (Thread w : workers) {
            w.join();
        }
        if (failure[0] != null) {
            failure[0].printStackTrace();
            System.exit(1);
        }
        // Let the cleaners free the dropped direct buffers, so the freed native memory
        // is left behind in the arenas.
        System.gc();
        Thread.sleep(200);

        long pid = ProcessHandle.current().pid();
        if (!quiet) {
            System.out.printf("ready: pid %d, threads %d, rounds %d, compressed %d MiB%n", pid,
                    threads, ROUNDS_DONE.get(), BYTES_COMPRESSED.get() >> 20);
            System.out.flush();
        }
        if (readyFile != null) {
            writeReadyFile(Paths.get(readyFile), pid);
        }
        while (true) {
            Thread.sleep(60_000);
        }
    }

    private static void churn(int index, long deadline) throws DataFormatException {
        SplittableRandom rnd = new SplittableRandom(0x5eed0000L + index);
        byte[] data = makeData(rnd);
        byte[] compressed = new byte[DATA_SIZE + DATA_SIZE / 100 + 1024];
        byte[] restored = new byte[DATA_SIZE];
        Deflater[] open = new Deflater[OPEN_DEFLATERS];
        ByteBuffer[] buffers = new ByteBuffer[DIRECT_BUFFERS];

        for (int round = 0; deadline != 0 ? System.nanoTime() < deadline : round < ROUNDS_ONCE;
                round++) {
            // Change a few bytes so every round compresses slightly different input.
            for (int k = 0; k < 64; k++) {
                data[rnd.nextInt(DATA_SIZE)] = (byte) rnd.nextInt(256);
            }

            Deflater deflater = new Deflater(1 + rnd.nextInt(9));
            deflater.setInput(data);
            deflater.finish();
            int n = 0;
            while (!deflater.finished()) {
                if (n == compressed.length) {
                    compressed = java.util.Arrays.copyOf(compressed, compressed.length * 2);
                }
                n += deflater.deflate(compressed, n, compressed.length - n);
            }

            Inflater inflater = new Inflater();
            inflater.setInput(compressed, 0, n);
            int m = 0;
            while (!inflater.finished() && m < restored.length) {
                m += inflater.inflate(restored, m, restored.length - m);
            }
            inflater.end();
            if (m != DATA_SIZE) {
                throw new IllegalStateException("inflated " + m + " bytes, expected " + DATA_SIZE);
            }

            // Keep this deflater open for a while; end the one it replaces (out of order).
            int slot = rnd.nextInt(OPEN_DEFLATERS);
            if (open[slot] != null) {
                open[slot].end();
            }
            open[slot] = deflater;

            // Allocate a direct buffer, touch it, and drop an older one.
            ByteBuffer buffer = ByteBuffer.allocateDirect(16 * 1024 + rnd.nextInt(240 * 1024));
            for (int p = 0; p < buffer.capacity(); p += 4096) {
                buffer.put(p, (byte) p);
            }
            buffers[rnd.nextInt(DIRECT_BUFFERS)] = buffer;

            ROUNDS_DONE.incrementAndGet();
            BYTES_COMPRESSED.addAndGet(DATA_SIZE);
        }

        for (Deflater d : open) {
            if (d != null) {
                d.end();
            }
        }
    }

    /** Text-like data (compresses a few times) with some random bytes mixed in. */
    private static byte[] makeData(SplittableRandom rnd) {
        StringBuilder sb = new StringBuilder(DATA_SIZE + 64);
        while (sb.length() < DATA_SIZE) {
            if (rnd.nextInt(8) == 0) {
                sb.append(Long.toHexString(rnd.nextLong()));
            } else {
                sb.append(WORDS[rnd.nextInt(WORDS.length)]);
            }
            sb.append(rnd.nextInt(5) == 0 ? '\n' : ' ');
        }
        byte[] text = sb.toString().getBytes(StandardCharsets.US_ASCII);
        return java.util.Arrays.copyOf(text, DATA_SIZE);
    }

    private static void writeReadyFile(Path path, long pid) throws IOException {
        Path tmp = Paths.get(path.toString() + ".tmp");
        Files.writeString(tmp, pid + "\n", StandardCharsets.US_ASCII);
        Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            System.err.println("NativeChurn: " + args[i - 1] + " needs a value");
            System.exit(2);
        }
        return args[i];
    }

    private static int parseInt(String[] args, int i, int min, int max) {
        String text = value(args, i);
        try {
            int v = Integer.parseInt(text);
            if (v >= min && v <= max) {
                return v;
            }
        } catch (NumberFormatException e) {
            // fall through
        }
        System.err.println("NativeChurn: " + args[i - 1] + " must be an integer in [" + min + ", "
                + max + "], got '" + text + "'");
        System.exit(2);
        return 0;
    }
}
