/*
 * ZlibHolder - a JVM that holds many Deflaters and Inflaters that are never
 * ended: zlib's state and windows, allocated with plain malloc, which NMT
 * cannot see. Enough of them make glibc arena heaps that the kernel merges
 * into one mapping.
 *
 * Usage: java ZlibHolder --count N --threads T --ready-file PATH [--hold-on-stdin]
 *                        [--input-bytes B] [--level L]
 *
 * Once started and idle it writes PATH.base (its pid) and waits until
 * PATH.go exists (with --hold-on-stdin: until a line "hold" on stdin, so a
 * sampler can be turned on before zlib's memory is taken; it exits 0 if
 * stdin closes first); then each of T threads (default 1) makes N/T Deflaters
 * (level L, default 6) and as many Inflaters, each having processed B bytes
 * (default 64 KiB: the Deflater compresses them with a sync flush, the
 * Inflater inflates that stream), so zlib's buffers are written as far as
 * B bytes reach (with 1 KiB, most of the windows and hash chains zlib
 * allocates stay untouched: allocated, not resident); all are kept
 * reachable and none is ended. Then it writes PATH (its pid) and idles. It allocates nothing while
 * it waits or idles, so readings taken then compare.
 */

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.zip.Deflater;
import java.util.zip.Inflater;

public final class ZlibHolder {
    private static final List<Object> HELD = new ArrayList<>();

    private ZlibHolder() {}

    public static void main(String[] args) throws Exception {
        int count = 3000;
        int threads = 1;
        String ready = null;
        boolean holdOnStdin = false;
        int inputBytes = 64 * 1024;
        int level = 6;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--count": count = Integer.parseInt(args[++i]); break;
                case "--threads": threads = Integer.parseInt(args[++i]); break;
                case "--ready-file": ready = args[++i]; break;
                case "--hold-on-stdin": holdOnStdin = true; break;
                case "--input-bytes": inputBytes = Integer.parseInt(args[++i]); break;
                case "--level": level = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (ready == null) throw new IllegalArgumentException("--ready-file is required");

        // Half-compressible input, and one compressed stream of it to inflate.
        byte[] input = new byte[inputBytes];
        Random random = new Random(42);
        for (int i = 0; i < input.length; i += 2) input[i] = (byte) random.nextInt(256);
        final byte[] data = input;
        final byte[] compressed = compress(data);
        final int deflateLevel = level;

        String pid = Long.toString(ProcessHandle.current().pid());
        writeAtomically(ready + ".base", pid);
        if (holdOnStdin) {
            if (!waitForHold()) System.exit(0);
        } else {
            File go = new File(ready + ".go");
            while (!go.exists()) Thread.sleep(50);
        }

        final int each = count / threads;
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; ++t) {
            Thread w = new Thread(() -> {
                List<Object> mine = new ArrayList<>();
                byte[] out = new byte[128 * 1024];
                for (int i = 0; i < each; ++i) {
                    Deflater d = new Deflater(deflateLevel);
                    d.setInput(data);
                    d.deflate(out, 0, out.length, Deflater.SYNC_FLUSH);
                    Inflater inf = new Inflater();
                    inf.setInput(compressed);
                    try {
                        inf.inflate(out);
                    } catch (java.util.zip.DataFormatException e) {
                        throw new RuntimeException(e);
                    }
                    mine.add(d);
                    mine.add(inf);
                }
                synchronized (HELD) {
                    HELD.add(mine);
                }
            });
            w.start();
            workers.add(w);
        }
        for (Thread w : workers) w.join();
        writeAtomically(ready, pid);
        Thread.sleep(Long.MAX_VALUE);
    }

    // Reads stdin until a line "hold" (true) or its end (false).
    private static boolean waitForHold() throws IOException {
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        for (String line; (line = in.readLine()) != null;) {
            if (line.trim().equals("hold")) return true;
        }
        return false;
    }

    private static byte[] compress(byte[] data) {
        Deflater d = new Deflater(6);
        d.setInput(data);
        d.finish();
        byte[] out = new byte[data.length + 1024];
        int n = d.deflate(out);
        d.end();
        byte[] result = new byte[n];
        System.arraycopy(out, 0, result, 0, n);
        return result;
    }

    private static void writeAtomically(String path, String text) throws IOException {
        File tmp = new File(path + ".tmp");
        try (FileOutputStream out = new FileOutputStream(tmp)) {
            out.write(text.getBytes(StandardCharsets.UTF_8));
        }
        if (!tmp.renameTo(new File(path))) throw new IOException("rename " + tmp);
    }
}
