/*
 * pause - a minimal stand-in for the Kubernetes pause container.
 *
 * Blocks SIGINT and SIGTERM and waits for one of them, then exits 0. Tests
 * copy or link the binary to a file named "pause" so its comm is "pause".
 */
#define _GNU_SOURCE

#include <signal.h>
#include <stdio.h>

int main(void) {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &stop, NULL) != 0) {
    perror("pause: sigprocmask");
    return 1;
  }
  for (;;) {
    int sig = 0;
    if (sigwait(&stop, &sig) == 0 && (sig == SIGINT || sig == SIGTERM)) {
      return 0;
    }
  }
}
