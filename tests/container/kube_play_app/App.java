/*
 * App - the application of deploy/kubernetes' example Deployment, as kube_play_test.py plays it:
 * the manifest runs `java -jar /app/app.jar` with no arguments, so this is that jar's main class.
 * It holds one direct buffer (native memory NMT counts) and then waits to be stopped.
 */

import java.nio.ByteBuffer;

public final class App {
  private App() {}

  public static void main(String[] args) throws Exception {
    ByteBuffer held = ByteBuffer.allocateDirect(8 << 20);
    held.put(0, (byte) 1);
    System.out.println("app: started");
    Thread.sleep(Long.MAX_VALUE);
    System.out.println(held.get(0));
  }
}
