/*
 * System calls for the agent's socket task (agent_sock.c) that touch nothing
 * but registers: no errno, no other thread-local state, no lock.
 *
 * Why not glibc's wrappers: the socket task is made with a raw clone()
 * without CLONE_SETTLS, so its thread pointer is the agent pthread's, and
 * every glibc wrapper that fails writes errno there (and some read or write
 * more of that thread's state: cancellation, the rseq area). Both tasks run
 * at the same time, so the socket task calls the kernel directly and gets
 * the error back as a negative return value (-EINTR, ...).
 *
 * Only x86_64 and aarch64: the two architectures memtrimd ships for.
 */
#ifndef MEMTRIMD_AGENT_SYS_H
#define MEMTRIMD_AGENT_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

#if defined(__x86_64__)

static inline long sys6(long n, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}

#elif defined(__aarch64__)

static inline long sys6(long n, long a, long b, long c, long d, long e, long f) {
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory");
  return x0;
}

#else
#error "libmemtrimd_agent: add this architecture's raw system call (agent_sys.h)"
#endif

#define SYS0(n) sys6((n), 0, 0, 0, 0, 0, 0)
#define SYS1(n, a) sys6((n), (long)(a), 0, 0, 0, 0, 0)
#define SYS2(n, a, b) sys6((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define SYS3(n, a, b, c) sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define SYS4(n, a, b, c, d) sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define SYS5(n, a, b, c, d, e) sys6((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

#endif
