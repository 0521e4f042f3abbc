/*
 * NativeGrower - a JVM whose native memory (direct ByteBuffers, outside the Java heap) grows
 * only when told to, so that a test can walk its RSS up to a memory limit and past it.
 *
 * Usage: java -XX:MaxDirectMemorySize=<more than the limit> NativeGrower
 *
 * Commands, one per line on stdin:
 *
 *   grow BYTES   allocate BYTES more of direct buffers (1 MiB each, the last one smaller),
 *                write every page of each so that it is resident, keep them all, then print
 *                "grown <total bytes held>"
 *   exit         exit 0 (so does end of input)
 *
 * "ready <pid>" is printed once at start. The test reads each answer before it sends the next
 * command. Direct buffers are the JVM's usual native memory that grows past -Xmx (NIO, Netty,
 * gRPC); MaxDirectMemorySize is set high so that the container's limit, not the JVM's own
 * check, is what the growth meets: the kernel's OOM kill, not an OutOfMemoryError.
 */

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

public final class NativeGrower {
    private static final int CHUNK_BYTES = 1024 * 1024;
    private static final int PAGE_BYTES = 4096;

    private NativeGrower() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 0) {
            System.err.println("usage: java NativeGrower  (on stdin: 'grow BYTES', 'exit')");
            System.exit(2);
        }
        List<ByteBuffer> held = new ArrayList<>();
        long total = 0;
        byte value = 1;
        System.out.println("ready " + ProcessHandle.current().pid());
        System.out.flush();
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.equals("exit")) {
                return;
            }
            String[] words = line.split(" ");
            long bytes = -1;
            if (words.length == 2 && words[0].equals("grow")) {
                try {
                    bytes = Long.parseLong(words[1]);
                } catch (NumberFormatException e) {
                    bytes = -1;
                }
            }
            if (bytes < 0) {
                System.err.println("NativeGrower: bad command: " + line);
                System.exit(2);
            }
            while (bytes > 0) {
                int n = (int) Math.min(bytes, CHUNK_BYTES);
                ByteBuffer b = ByteBuffer.allocateDirect(n);
                // allocateDirect zeroes the memory already; a non-zero byte per page makes the
                // residency explicit rather than an implementation detail.
                for (int i = 0; i < n; i += PAGE_BYTES) {
                    b.put(i, value);
                }
                value = (byte) (value == Byte.MAX_VALUE ? 1 : value + 1);
                held.add(b);
                total += n;
                bytes -= n;
            }
            System.out.println("grown " + total);
            System.out.flush();
        }
    }
}
