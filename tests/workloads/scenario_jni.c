/*
 * scenario_jni - the native half of NativeScenario's "outside" scenario:
 * memory a JVM holds that Native Memory Tracking cannot see, as a native
 * library's plain malloc calls (zlib, TLS, QUIC in production) make it.
 */
#include <jni.h>
#include <stdlib.h>
#include <string.h>

/* Kept until the process ends: the scenario holds this memory. */
static char **chunks;
static size_t chunk_count;

/* Mallocs `bytes` in `chunk`-byte pieces and writes every byte (so every
 * page is resident); returns the bytes allocated, less than asked when
 * malloc failed. */
JNIEXPORT jlong JNICALL Java_NativeScenario_mallocChunks(JNIEnv *env, jclass cls, jlong bytes,
                                                         jint chunk) {
  (void)env;
  (void)cls;
  if (bytes <= 0 || chunk <= 0 || chunks != NULL) return 0;
  size_t n = (size_t)bytes / (size_t)chunk;
  chunks = calloc(n, sizeof *chunks);
  if (chunks == NULL) return 0;
  for (size_t i = 0; i < n; i++) {
    chunks[i] = malloc((size_t)chunk);
    if (chunks[i] == NULL) break;
    memset(chunks[i], (int)(i & 0x7f) + 1, (size_t)chunk);
    chunk_count++;
  }
  return (jlong)(chunk_count * (size_t)chunk);
}
