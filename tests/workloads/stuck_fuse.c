/*
 * stuck_fuse - a FUSE filesystem whose lookups, or whose one file's reads,
 * are slow or never answered: a hung network filesystem, or a hostile FUSE
 * server, under a path that memtrimd looks up on a target's behalf or behind
 * a target's file mapping.
 *
 *   stuck_fuse MOUNTPOINT READY_FILE DELAY_MS [DATA_MIB READ_LOG]
 *
 * Needs root (it opens /dev/fuse and calls mount(2) itself, no fusermount).
 * Mounts a directory with allow_other at MOUNTPOINT (so that every uid's
 * requests reach it, as with a network filesystem), creates READY_FILE, then
 * serves requests one at a time.
 *
 * With three arguments the directory is empty: the root directory's
 * attributes are answered at once; every LOOKUP after DELAY_MS milliseconds
 * (ENOENT), or never when DELAY_MS is -1.
 *
 * With DATA_MIB and READ_LOG the directory holds one regular file, "data",
 * of DATA_MIB MiB: its LOOKUP, GETATTR, OPEN and RELEASE are answered at once
 * (any other name: ENOENT at once; OPEN keeps the page cache), and each READ
 * after DELAY_MS, or never when -1. Every READ is first appended to READ_LOG (created empty before
 * READY_FILE) as "<tid> <offset> <size>\n", tid being the thread the kernel
 * sent it for: who read the file's contents, and how often.
 *
 * A request this server never answers has been read from /dev/fuse: the
 * kernel makes the caller wait for it uninterruptibly, as it does for any
 * FUSE request its server has taken, until the server answers or its
 * connection ends (this process exiting ends it). On SIGTERM it unmounts
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
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static const char* mountpoint;
enum { kDataNode = 2 };

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

/* A READ's answer: `len` bytes of the file from `offset` (every byte 'd'). */
static void reply_data(int fd, uint64_t unique, uint64_t offset, uint32_t len, uint64_t size) {
  static char data[1024 * 1024];
  if (data[0] != 'd') memset(data, 'd', sizeof data);
  if (offset >= size) len = 0;
  if (len > size - offset) len = (uint32_t)(size - offset);
  if (len > sizeof data) len = sizeof data;
  struct fuse_out_header h = {.len = (uint32_t)(sizeof h + len), .unique = unique};
  struct iovec v[2] = {{&h, sizeof h}, {data, len}};
  if (writev(fd, v, 2) < 0 && errno != ENOENT) perror("stuck_fuse: writev");
}

/* The attributes of the root directory (nodeid 1) or of "data" (2). */
static struct fuse_attr attr_of(uint64_t nodeid, uint64_t data_size) {
  struct fuse_attr a = {.ino = nodeid, .nlink = 1, .blksize = 4096};
  if (nodeid == kDataNode) {
    a.mode = S_IFREG | 0444;
    a.size = data_size;
    a.blocks = (data_size + 511) / 512;
  } else {
    a.mode = S_IFDIR | 0755;
    a.nlink = 2;
  }
  return a;
}

static void sleep_ms(long ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

int main(int argc, char** argv) {
  if (argc != 4 && argc != 6) {
    fprintf(stderr, "usage: stuck_fuse MOUNTPOINT READY_FILE DELAY_MS [DATA_MIB READ_LOG]\n");
    return 2;
  }
  mountpoint = argv[1];
  long delay_ms = strtol(argv[3], NULL, 10);
  /* The file mode: "data" of data_size bytes, its READs logged to read_log. */
  const int file_mode = argc == 6;
  const uint64_t data_size = file_mode ? strtoull(argv[4], NULL, 10) << 20 : 0;
  int read_log = -1;
  if (file_mode) {
    read_log = open(argv[5], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (read_log < 0 || data_size == 0) {
      fprintf(stderr, "stuck_fuse: bad DATA_MIB or READ_LOG %s: %s\n", argv[5], strerror(errno));
      return 2;
    }
  }
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
        o.attr = attr_of(file_mode ? in->nodeid : 1, data_size);
        reply(fd, in->unique, 0, &o, sizeof o);
        break;
      }
      case FUSE_LOOKUP:
        if (file_mode) {
          const char* name = (const char*)(in + 1);
          if (in->nodeid != 1 || strcmp(name, "data") != 0) {
            reply(fd, in->unique, -ENOENT, NULL, 0);
            break;
          }
          struct fuse_entry_out o = {.nodeid = kDataNode, .entry_valid = 3600, .attr_valid = 3600};
          o.attr = attr_of(kDataNode, data_size);
          reply(fd, in->unique, 0, &o, sizeof o);
          break;
        }
        if (delay_ms < 0) break; /* taken, never answered */
        sleep_ms(delay_ms);
        reply(fd, in->unique, -ENOENT, NULL, 0);
        break;
      case FUSE_OPEN:
      case FUSE_OPENDIR: {
        /* Keep the page cache: an open that drops it waits for the pages of
         * a READ never answered, so a second process opening the file would
         * wait in open() rather than on the page. */
        struct fuse_open_out o = {.open_flags = FOPEN_KEEP_CACHE};
        reply(fd, in->unique, file_mode ? 0 : -ENOSYS, &o, file_mode ? sizeof o : 0);
        break;
      }
      case FUSE_RELEASE:
      case FUSE_RELEASEDIR:
      case FUSE_FLUSH:
        reply(fd, in->unique, file_mode ? 0 : -ENOSYS, NULL, 0);
        break;
      case FUSE_READ: {
        if (!file_mode || in->nodeid != kDataNode) {
          reply(fd, in->unique, -ENOSYS, NULL, 0);
          break;
        }
        const struct fuse_read_in* r = (const struct fuse_read_in*)(in + 1);
        dprintf(read_log, "%u %llu %u\n", in->pid, (unsigned long long)r->offset, r->size);
        if (delay_ms < 0) break; /* taken, never answered */
        sleep_ms(delay_ms);
        reply_data(fd, in->unique, r->offset, r->size, data_size);
        break;
      }
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
