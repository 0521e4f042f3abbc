/*
 * BufferPools - holds direct buffers, a mapped file and cached temporary
 * direct buffers, and writes what the JVM's BufferPoolMXBeans say about them:
 * the ground truth for memtrimd's buffer pool figures.
 *
 * Usage: java BufferPools --ready-file PATH [--dir DIR] [--direct N] [--direct-bytes B]
 *                         [--map-bytes B] [--readers T] [--read-bytes B]
 *
 * Allocates N direct buffers of B bytes each (ByteBuffer.allocateDirect),
 * maps a file of --map-bytes (FileChannel.map READ_WRITE, every page
 * touched), and starts T threads that each read a file of --read-bytes into a
 * heap buffer through a FileChannel: the channel takes a temporary direct
 * buffer of the whole size and the thread keeps it in sun.nio.ch.Util's
 * per-thread cache. The threads stay alive (the cache is per thread). Then it
 * writes the ready file ("key=value" lines; a pool's name with every
 * character other than a letter or digit turned into '_'):
 *   pid=<pid>
 *   pool.<name>.count=...  pool.<name>.capacity=...  pool.<name>.used=...
 * for every BufferPoolMXBean, and idles until killed. Nothing changes after
 * the ready file is written.
 */

import java.io.File;
import java.io.FileOutputStream;
import java.io.RandomAccessFile;
import java.lang.management.BufferPoolMXBean;
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
import java.util.concurrent.CountDownLatch;

public final class BufferPools {
    private BufferPools() {}

    // Held until exit so that nothing is freed before memtrimd looks.
    private static final List<Object> HELD = new ArrayList<>();

    public static void main(String[] args) throws Exception {
        String ready = null;
        String dir = System.getProperty("java.io.tmpdir");
        int direct = 0;
        int directBytes = 0;
        long mapBytes = 0;
        int readers = 0;
        int readBytes = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--ready-file": ready = args[++i]; break;
                case "--dir": dir = args[++i]; break;
                case "--direct": direct = Integer.parseInt(args[++i]); break;
                case "--direct-bytes": directBytes = Integer.parseInt(args[++i]); break;
                case "--map-bytes": mapBytes = Long.parseLong(args[++i]); break;
                case "--readers": readers = Integer.parseInt(args[++i]); break;
                case "--read-bytes": readBytes = Integer.parseInt(args[++i]); break;
                default: throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        for (int i = 0; i < direct; i++) HELD.add(ByteBuffer.allocateDirect(directBytes));

        if (mapBytes > 0) {
            Path file = Files.createTempFile(Paths.get(dir), "buffer-pools-map", ".bin");
            file.toFile().deleteOnExit();
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ,
                                                   StandardOpenOption.WRITE)) {
                MappedByteBuffer m = ch.map(FileChannel.MapMode.READ_WRITE, 0, mapBytes);
                for (int p = 0; p < mapBytes; p += 4096) m.put(p, (byte) 1);
                HELD.add(m);
            }
        }

        if (readers > 0) {
            Path file = Files.createTempFile(Paths.get(dir), "buffer-pools-read", ".bin");
            file.toFile().deleteOnExit();
            // java.io, not Files.write: a NIO write from this thread would
            // cache a temporary buffer of its own and blur the truth.
            try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
                raf.setLength(readBytes);
            }
            final int size = readBytes;
            CountDownLatch done = new CountDownLatch(readers);
            CountDownLatch never = new CountDownLatch(1);
            for (int t = 0; t < readers; t++) {
                Thread reader = new Thread(() -> {
                    try (FileChannel ch = FileChannel.open(file)) {
                        ByteBuffer heap = ByteBuffer.allocate(size);
                        while (heap.hasRemaining() && ch.read(heap) >= 0) {
                            // a heap buffer: the channel reads through a cached direct one
                        }
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                    done.countDown();
                    try {
                        never.await(); // keep the thread, and so its cache, alive
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "reader-" + t);
                reader.setDaemon(true);
                reader.start();
            }
            done.await();
        }

        StringBuilder out = new StringBuilder();
        out.append("pid=").append(ProcessHandle.current().pid()).append('\n');
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            String name = pool.getName().replaceAll("[^A-Za-z0-9]", "_");
            out.append("pool.").append(name).append(".count=").append(pool.getCount()).append('\n');
            out.append("pool.").append(name).append(".capacity=")
               .append(pool.getTotalCapacity()).append('\n');
            out.append("pool.").append(name).append(".used=")
               .append(pool.getMemoryUsed()).append('\n');
        }
        if (ready != null) {
            // java.io again (see above); rename: the file appears complete.
            File tmp = new File(ready + ".tmp");
            try (FileOutputStream f = new FileOutputStream(tmp)) {
                f.write(out.toString().getBytes(StandardCharsets.UTF_8));
            }
            if (!tmp.renameTo(new File(ready))) throw new IllegalStateException("rename " + tmp);
        }
        Thread.sleep(Long.MAX_VALUE);
    }
}
