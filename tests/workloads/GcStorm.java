/*
 * GcStorm - one GC shape per run, with its own ground truth from the JVM's GC notifications
 * (GarbageCollectorMXBean, com.sun.management.GarbageCollectionNotificationInfo), for the
 * direct_buffer_gc_storm tests.
 *
 * Usage: java GcStorm --ready-file PATH --truth-file PATH --mode storm|periodic|churn
 *                     [--period-ms N]
 *
 *   storm     threads allocate 1 MiB direct buffers and drop them; run it with a small
 *             -XX:MaxDirectMemorySize, so each reservation that does not fit calls System.gc()
 *             (java.nio.Bits.reserveMemory): dozens of full collections a second
 *   periodic  a thread churns the heap slowly (a few young collections a second) and another
 *             calls System.gc() every --period-ms (5000 by default): an explicit GC now and
 *             then among young ones, not a storm
 *   churn     threads churn the heap as fast as they can: hundreds of young collections a
 *             second, no System.gc()
 *
 * The truth file is rewritten (atomically) each time a collection ends, with lines
 * "key=value": gcs (every collection the notifications reported), system_gcs (those whose
 * gcCause is "System.gc()"), system_gc_ms (a list, the uptime in ms at the end of each
 * System.gc() call's collections, the last 4096: collections back to back, as Parallel's young
 * and full one for one call on JDK 17, count once), and for each collection's gcName (the
 * bean's name) a line "name.<gcName>=<count>". The ready file (written atomically) holds the pid, written
 * once the listeners are registered.
 */

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.TreeMap;
import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

public final class GcStorm {
  private GcStorm() {}

  private static final Object LOCK = new Object();
  private static long gcs = 0;
  private static long systemGcs = 0;
  private static final ArrayDeque<Long> SYSTEM_GC_MS = new ArrayDeque<>();
  private static final Map<String, Long> BY_NAME = new TreeMap<>();
  private static Path truth;
  // Kept reachable so the JIT cannot drop the allocations.
  static volatile Object sink;

  private static void usage() {
    System.err.println(
        "usage: java GcStorm --ready-file PATH --truth-file PATH --mode storm|periodic|churn"
            + " [--period-ms N]");
    System.exit(2);
  }

  public static void main(String[] args) throws Exception {
    String ready = null;
    String truthFile = null;
    String mode = null;
    long periodMs = 5000;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--ready-file":
          ready = args[++i];
          break;
        case "--truth-file":
          truthFile = args[++i];
          break;
        case "--mode":
          mode = args[++i];
          break;
        case "--period-ms":
          periodMs = Long.parseLong(args[++i]);
          break;
        default:
          usage();
      }
    }
    if (ready == null || truthFile == null || mode == null) usage();
    truth = Paths.get(truthFile);
    for (GarbageCollectorMXBean bean : ManagementFactory.getGarbageCollectorMXBeans()) {
      ((NotificationEmitter) bean)
          .addNotificationListener(
              (n, h) -> {
                if (!n.getType().equals(GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION)) {
                  return;
                }
                GarbageCollectionNotificationInfo info =
                    GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData());
                record(info);
              },
              null,
              null);
    }
    writeTruth();
    switch (mode) {
      case "storm":
        for (int t = 0; t < 2; t++) start("storm-" + t, GcStorm::directChurn);
        break;
      case "periodic":
        start("young", () -> heapChurn(2));
        final long period = periodMs;
        start(
            "system-gc",
            () -> {
              while (true) {
                sleep(period);
                System.gc();
              }
            });
        break;
      case "churn":
        for (int t = 0; t < 2; t++) start("churn-" + t, () -> heapChurn(0));
        break;
      default:
        usage();
    }
    Path tmp = Paths.get(ready + ".tmp");
    Files.writeString(tmp, ProcessHandle.current().pid() + "\n");
    Files.move(tmp, Paths.get(ready), StandardCopyOption.ATOMIC_MOVE);
    Thread.sleep(Long.MAX_VALUE);
  }

  private static void record(GarbageCollectionNotificationInfo info) {
    synchronized (LOCK) {
      gcs++;
      BY_NAME.merge(info.getGcName(), 1L, Long::sum);
      if ("System.gc()".equals(info.getGcCause())) {
        systemGcs++;
        long start = info.getGcInfo().getStartTime();
        long end = info.getGcInfo().getEndTime();
        // Parallel on JDK 17 runs a young collection and then a full one for one System.gc(),
        // each reported with that cause: a collection starting within 1 ms of the previous
        // System.gc() collection's end is the same call.
        if (!SYSTEM_GC_MS.isEmpty() && start - SYSTEM_GC_MS.peekLast() <= 1) {
          SYSTEM_GC_MS.removeLast();
        }
        SYSTEM_GC_MS.addLast(end);
        if (SYSTEM_GC_MS.size() > 4096) SYSTEM_GC_MS.removeFirst();
      }
      try {
        writeTruth();
      } catch (Exception e) {
        e.printStackTrace();
      }
    }
  }

  private static void writeTruth() throws Exception {
    StringBuilder b = new StringBuilder();
    synchronized (LOCK) {
      b.append("uptime_ms=").append(ManagementFactory.getRuntimeMXBean().getUptime()).append('\n');
      b.append("gcs=").append(gcs).append('\n');
      b.append("system_gcs=").append(systemGcs).append('\n');
      StringBuilder ms = new StringBuilder();
      for (long t : SYSTEM_GC_MS) ms.append(ms.length() == 0 ? "" : ",").append(t);
      b.append("system_gc_ms=").append(ms).append('\n');
      for (Map.Entry<String, Long> e : BY_NAME.entrySet()) {
        b.append("name.").append(e.getKey()).append('=').append(e.getValue()).append('\n');
      }
    }
    Path tmp = Paths.get(truth + ".tmp");
    Files.writeString(tmp, b.toString());
    Files.move(tmp, truth, StandardCopyOption.ATOMIC_MOVE);
  }

  private static void start(String name, Runnable r) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    t.start();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // Drops a 1 MiB direct buffer after each allocation: the buffers are freed only when a
  // collection finds them unreachable, so near the limit every reservation waits for one.
  private static void directChurn() {
    while (true) {
      ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
      b.put(0, (byte) 1);
      sink = b;
    }
  }

  // Allocates 64 KiB arrays, sleeping pauseMs after each when pauseMs > 0 (a slow churn: about
  // 30 MiB a second at 2 ms, a few young collections a second in a 64 MiB heap).
  private static void heapChurn(long pauseMs) {
    while (true) {
      sink = new byte[64 << 10];
      if (pauseMs > 0) sleep(pauseMs);
    }
  }
}
