/*
 * stuck_fuse - a FUSE filesystem whose lookups are slow or never answered:
 * a hung network filesystem, or a hostile FUSE server, under a path that
 * memtrimd looks up on a target's behalf.
 *
 *   stuck_fuse MOUNTPOINT READY_FILE DELAY_MS
 *
 * Needs root (it opens /dev/fuse and calls mount(2) itself, no fusermount).
 * Mounts an empty directory with allow_other at MOUNTPOINT (so that every
 * uid's lookups reach it, as with a network filesystem), creates READY_FILE,
 * then serves requests one at a time: the root directory's attributes at
 * once; every LOOKUP after DELAY_MS milliseconds (ENOENT), or never when
 * DELAY_MS is -1. A request this server never answers has been read from
 * /dev/fuse: the kernel makes the caller wait for it uninterruptibly, as it
 * does for any FUSE request its server has taken, until the server answers or
 * its connection ends (this process exiting ends it). On SIGTERM it unmounts
 * (lazily) and exits 0; after SIGKILL the caller unmounts.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char* mountpoint;

static void on_term(int sig) {
  (void)sig;
  umount2(mountpoint, MNT_DETACH);
  _exit(0);
}

static void reply(int fd, uint64_t unique, int error, const void* body, size_t len) {
  char out[sizeof(struct fuse_out_header) + 256];
  struct fuse_out_header h = {.len = (uint32_t)(sizeof h + len), .error = error, .unique = unique};
  memcpy(out, &h, sizeof h);
  if (len > 0) memcpy(out + sizeof h, body, len);
  if (write(fd, out, sizeof h + len) < 0 && errno != ENOENT) perror("stuck_fuse: write");
}

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: stuck_fuse MOUNTPOINT READY_FILE DELAY_MS\n");
    return 2;
  }
  mountpoint = argv[1];
  long delay_ms = strtol(argv[3], NULL, 10);
  int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    perror("stuck_fuse: open /dev/fuse");
    return 1;
  }
  char opts[128];
  snprintf(opts, sizeof opts, "fd=%d,rootmode=40755,user_id=0,group_id=0,allow_other", fd);
  if (mount("stuck_fuse", mountpoint, "fuse.stuck_fuse", MS_NOSUID | MS_NODEV, opts) != 0) {
    perror("stuck_fuse: mount");
    return 1;
  }
  struct sigaction sa = {.sa_handler = on_term};
  sigaction(SIGTERM, &sa, NULL);

  static char buf[FUSE_MIN_READ_BUFFER + 1024 * 1024];
  int ready_made = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || errno == ENOENT) continue;
      if (errno == ENODEV) return 0; /* unmounted */
      perror("stuck_fuse: read");
      return 1;
    }
    if ((size_t)n < sizeof(struct fuse_in_header)) continue;
    const struct fuse_in_header* in = (const struct fuse_in_header*)buf;
    switch (in->opcode) {
      case FUSE_INIT: {
        struct fuse_init_out o = {.major = FUSE_KERNEL_VERSION,
                                  .minor = FUSE_KERNEL_MINOR_VERSION,
                                  .max_readahead = 65536,
                                  .max_background = 16,
                                  .congestion_threshold = 12,
                                  .max_write = 65536,
                                  .time_gran = 1};
        reply(fd, in->unique, 0, &o, sizeof o);
        if (!ready_made) {
          int r = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
          if (r >= 0) close(r);
          ready_made = 1;
        }
        break;
      }
      case FUSE_GETATTR: {
        struct fuse_attr_out o = {0};
        o.attr_valid = 3600;
        o.attr.ino = in->nodeid;
        o.attr.mode = S_IFDIR | 0755;
        o.attr.nlink = 2;
        reply(fd, in->unique, 0, &o, sizeof o);
        break;
      }
      case FUSE_LOOKUP:
        if (delay_ms < 0) break; /* taken, never answered */
        sleep_ms(delay_ms);
        reply(fd, in->unique, -ENOENT, NULL, 0);
        break;
      case FUSE_FORGET:
      case FUSE_BATCH_FORGET:
      case FUSE_INTERRUPT:
        break; /* no answer expected (an interrupted lookup is still answered late) */
      case FUSE_DESTROY:
        reply(fd, in->unique, 0, NULL, 0);
        return 0;
      default:
        reply(fd, in->unique, -ENOSYS, NULL, 0);
        break;
    }
  }
}
