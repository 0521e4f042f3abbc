/*
 * A string builder over a caller's fixed buffer, for the agent's answers:
 * no stdio and no malloc (the agent thread must not allocate, see
 * memtrimd_agent.c). Sets `overflow` instead of writing past the end.
 */
#ifndef MEMTRIMD_AGENT_OUT_H
#define MEMTRIMD_AGENT_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct out {
  char* p;
  size_t len, cap;
  int overflow;
};

static inline void put_str(struct out* o, const char* s) {
  size_t n = strlen(s);
  if (o->len + n > o->cap) {
    o->overflow = 1;
    return;
  }
  memcpy(o->p + o->len, s, n);
  o->len += n;
}

static inline void put_u64(struct out* o, uint64_t v) {
  char digits[24];
  size_t i = sizeof digits;
  digits[--i] = '\0';
  do {
    digits[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v != 0);
  put_str(o, digits + i);
}

static inline void put_i64(struct out* o, int64_t v) {
  if (v < 0) {
    put_str(o, "-");
    put_u64(o, (uint64_t)0 - (uint64_t)v);
    return;
  }
  put_u64(o, (uint64_t)v);
}

/* Lowercase hex digits, no prefix (addresses in the "sites" answer). */
static inline void put_hex(struct out* o, uintptr_t v) {
  char digits[2 * sizeof v + 1];
  size_t i = sizeof digits;
  digits[--i] = '\0';
  do {
    digits[--i] = "0123456789abcdef"[v & 15];
    v >>= 4;
  } while (v != 0);
  put_str(o, digits + i);
}

static inline void put_kv(struct out* o, const char* key, uint64_t v) {
  put_str(o, key);
  put_str(o, "=");
  put_u64(o, v);
  put_str(o, "\n");
}

static inline void put_kv_i64(struct out* o, const char* key, int64_t v) {
  put_str(o, key);
  put_str(o, "=");
  put_i64(o, v);
  put_str(o, "\n");
}

static inline void put_kv_str(struct out* o, const char* key, const char* v) {
  put_str(o, key);
  put_str(o, "=");
  put_str(o, v);
  put_str(o, "\n");
}

#endif
