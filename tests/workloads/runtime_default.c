/*
 * runtime_default - runs a command under the rules Kubernetes' RuntimeDefault
 * seccomp profile (containerd's and Docker's default profile) has for
 * creating tasks and namespaces, for a container without CAP_SYS_ADMIN (as
 * Pod Security "restricted" requires: it drops every capability):
 *
 *   unshare                                  EPERM
 *   clone with a namespace flag (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS,
 *     CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET: the mask
 *     0x7E020000 that profile tests)        EPERM
 *   clone without one                        allowed
 *   clone3                                   ENOSYS (the profile cannot
 *                                            read clone3's flags, which sit
 *                                            in memory; glibc then falls back
 *                                            to clone)
 *   setns                                    EPERM
 *   another architecture's calls (i386 or x32 on x86_64)  EPERM
 *
 * Everything else is allowed: the rest of that profile is an allow-list
 * ordinary programs pass, and these are the rules that decide whether the
 * preload agent can keep a descriptor table of its own. The profile used by
 * the pod tests (runtime-default-like.json, podman's default with unshare
 * only for CAP_SYS_ADMIN) is looser on clone and clone3 (it allows both
 * unfiltered); the rules here are the stricter ones of containerd and Docker,
 * so an agent that starts here starts under both.
 *
 * The filter is a real BPF seccomp filter (PR_SET_NO_NEW_PRIVS, then
 * PR_SET_SECCOMP), inherited by every child and kept across exec, as a
 * container runtime installs it before the container's first program.
 *
 *   runtime_default COMMAND [ARG...]
 */
#define _GNU_SOURCE

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "runtime_default: add this architecture's AUDIT_ARCH"
#endif

#ifndef SYS_clone3
#define SYS_clone3 435 /* the same number on every architecture */
#endif
#define NAMESPACE_FLAGS 0x7E020000u
#define X32_SYSCALL_BIT 0x40000000u

#define LOAD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define RET_ERRNO(e) BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (e))
#define RET_ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: runtime_default COMMAND [ARG...]\n");
    return 2;
  }
  struct sock_filter filter[] = {
      /* [0] Another architecture's calls (i386 on x86_64): fail them all. */
      LOAD(arch),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
      RET_ERRNO(EPERM),
      /* [3] x32 calls on x86_64 carry this bit in their number. */
      LOAD(nr),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, X32_SYSCALL_BIT, 0, 1),
      RET_ERRNO(EPERM),
      /* [6] */
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 0, 1),
      RET_ERRNO(EPERM),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setns, 0, 1),
      RET_ERRNO(EPERM),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
      RET_ERRNO(ENOSYS),
      /* [12] clone: its flags are the first argument on x86_64 and
       * aarch64; the namespace flags are in its low 32 bits. */
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
      LOAD(args[0]),
      BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, NAMESPACE_FLAGS, 0, 1),
      RET_ERRNO(EPERM),
      RET_ALLOW,
  };
  struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    fprintf(stderr, "runtime_default: seccomp: %s\n", strerror(errno));
    return 1;
  }
  execvp(argv[1], argv + 1);
  fprintf(stderr, "runtime_default: exec %s: %s\n", argv[1], strerror(errno));
  return 127;
}
