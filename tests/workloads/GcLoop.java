/*
 * GcLoop - a JVM that runs System.gc() in a loop, or one that does nothing, for the GC counter
 * tests (hsperfdata's sun.gc.collector.* and sun.gc.lastCause).
 *
 * Usage: java GcLoop --ready-file PATH [--loop]
 *
 * With --loop a thread calls System.gc() back to back (a full collection each: the shape of a
 * GC storm from Bits.reserveMemory); without it nothing allocates after start-up, so the
 * collection counters stay still. The ready file (written atomically) holds the pid, after the
 * first System.gc() has returned when looping.
 */

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;

public final class GcLoop {
  private GcLoop() {}

  public static void main(String[] args) throws Exception {
    String ready = null;
    boolean loop = false;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--ready-file":
          ready = args[++i];
          break;
        case "--loop":
          loop = true;
          break;
        default:
          System.err.println("usage: java GcLoop --ready-file PATH [--loop]");
          System.exit(2);
      }
    }
    if (ready == null) {
      System.err.println("usage: java GcLoop --ready-file PATH [--loop]");
      System.exit(2);
    }
    if (loop) {
      System.gc();
      Thread t = new Thread(() -> {
        while (true) {
          System.gc();
        }
      }, "gc-loop");
      t.setDaemon(true);
      t.start();
    }
    Path tmp = Paths.get(ready + ".tmp");
    Files.writeString(tmp, ProcessHandle.current().pid() + "\n");
    Files.move(tmp, Paths.get(ready), StandardCopyOption.ATOMIC_MOVE);
    Thread.sleep(Long.MAX_VALUE);
  }
}
