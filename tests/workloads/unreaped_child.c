/*
 * unreaped_child - a parent that never reaps its child, so that the child
 * becomes a zombie when it exits (or is killed) and stays one.
 *
 *   unreaped_child --tag T --ready-file PATH
 *
 * Starts a child (this program again, with --child) whose command line holds
 * "child-T" where the parent's holds only "T", so a pattern can match the
 * child alone. The child writes "<its pid>\n" to PATH when it runs, and waits
 * for SIGINT or SIGTERM; it dies with its parent (PR_SET_PDEATHSIG). The
 * parent waits for SIGINT or SIGTERM without ever calling wait(2), so a child
 * that exits stays a zombie until the parent exits. Both exit 0.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define WORKLOAD_NAME "unreaped_child"
#include "workload.h"

static void wait_for_stop(void) {
  sigset_t stop;
  block_stop_signals(&stop);
  for (;;) {
    int sig = 0;
    if (sigwait(&stop, &sig) == 0 && (sig == SIGINT || sig == SIGTERM)) {
      return;
    }
  }
}

int main(int argc, char** argv) {
  const char* tag = NULL;
  const char* ready_file = NULL;
  int child = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--child") == 0) {
      child = 1;
    } else if (strcmp(argv[i], "--tag") == 0 && i + 1 < argc) {
      tag = argv[++i];
    } else if (strcmp(argv[i], "--ready-file") == 0 && i + 1 < argc) {
      ready_file = argv[++i];
    } else {
      fprintf(stderr, "usage: unreaped_child --tag T --ready-file PATH\n");
      return 2;
    }
  }
  if (tag == NULL || ready_file == NULL) {
    fprintf(stderr, "usage: unreaped_child --tag T --ready-file PATH\n");
    return 2;
  }
  if (child) {
    if (write_ready_file(ready_file) != 0) {
      return 1;
    }
    wait_for_stop();
    return 0;
  }

  char child_tag[256];
  int len = snprintf(child_tag, sizeof child_tag, "child-%s", tag);
  if (len < 0 || (size_t)len >= sizeof child_tag) {
    fprintf(stderr, WORKLOAD_NAME ": tag too long\n");
    return 2;
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, WORKLOAD_NAME ": fork: %s\n", strerror(errno));
    return 1;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
      _exit(1); /* the parent died before the prctl */
    }
    char* child_argv[] = {argv[0],        "--child",         "--tag", child_tag,
                          "--ready-file", (char*)ready_file, NULL};
    execv("/proc/self/exe", child_argv);
    fprintf(stderr, WORKLOAD_NAME ": exec: %s\n", strerror(errno));
    _exit(1);
  }
  wait_for_stop();
  return 0;
}
