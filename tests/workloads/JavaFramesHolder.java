/*
 * JavaFramesHolder - native memory held through Java methods that memtrimd's
 * sampler must tell apart by their Java frames: two methods hold Deflaters
 * through the same native path (Deflater.<init> -> Deflater.init -> zlib),
 * in a known ratio, and a third holds direct buffers (Unsafe.allocateMemory
 * -> the JVM's os::malloc).
 *
 * Usage: java JavaFramesHolder --ready-file PATH [--a N] [--b N] [--direct-mib N]
 *                              [--zlib-late]
 *
 * Loads zlib (one Deflater made and ended; not with --zlib-late, where a JDK
 * that loads it lazily loads it at the first Deflater held), writes
 * PATH.base (its pid), then waits for a line "hold" on
 * stdin (so a sampler can be turned on first); then holdDeflatersA makes N
 * (default 240) Deflaters, holdDeflatersB N (default 120) and holdDirect N
 * (default 32) direct buffers of 1 MiB, all kept reachable, none ended.
 * Then it writes PATH ("a=<n> b=<n> direct_mib=<n>") and idles until stdin
 * closes, when it exits 0.
 */

import java.io.BufferedReader;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
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

    public static void main(String[] args) throws Exception {
        int a = 240;
        int b = 120;
        int direct = 32;
        String ready = null;
        boolean zlibLate = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--a": a = Integer.parseInt(args[++i]); break;
                case "--b": b = Integer.parseInt(args[++i]); break;
                case "--direct-mib": direct = Integer.parseInt(args[++i]); break;
                case "--ready-file": ready = args[++i]; break;
                case "--zlib-late": zlibLate = true; break;
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
        writeAtomically(ready, "a=" + a + " b=" + b + " direct_mib=" + direct);
        while (in.readLine() != null) {
            // held until stdin closes
        }
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
