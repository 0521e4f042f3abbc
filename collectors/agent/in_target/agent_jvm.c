/*
 * "jvm_buffers": BufferPoolMXBean's figures for the "direct" and "mapped"
 * pools, and the size of sun.nio.ch.Util's per-thread temporary direct
 * buffer cache, read inside a JVM that runs with libmemtrimd_agent.so
 * preloaded. docs/buffer-pools.md says why this way and what it costs.
 *
 * Only a JVM that has finished starting is attached to (vm_started below).
 *
 * What runs in the JVM. The agent thread attaches itself for one request
 * (AttachCurrentThreadAsDaemon, named "memtrimd-agent": a daemon thread never
 * holds up the JVM's exit), reads fields, and detaches before it answers, so
 * a thread dump between requests never shows it. Attaching and detaching run
 * the JDK's own bookkeeping (the java.lang.Thread constructor, Thread.exit)
 * as for any native thread that attaches; memtrimd's code calls no Java
 * method: it reads fields (Get*Field, array elements) and calls two of the
 * functions libjvm.so exports for the JDK's own native code (the java.base
 * library), looked up like JNI_GetCreatedJavaVMs:
 *   JVM_FindLoadedClass(env, NULL, name)  a class the boot loader has
 *       already loaded, or NULL: no loading, no class loader's Java code
 *       (JNI's FindClass would run the application class loader's loadClass
 *       for a name it has not seen, and load the class);
 *   JVM_GetAllThreads(env, NULL)  the live platform threads, as
 *       Thread.getAllThreads gets them.
 * Not JVMTI: on JDK 21+ creating a JVMTI environment in a running JVM turns
 * on the JVMTI notifications of every virtual thread mount and unmount for
 * good, which costs a program with virtual threads throughput.
 *
 * A class that is not loaded has no instances and its counters were never
 * touched: its figures are 0. Looking up a field of a loaded class
 * initialises it if it was not yet; the classes looked up (Bits,
 * FileChannelImpl$DefaultUnmapper, Util$BufferCache, and Thread, ThreadLocal's
 * map and entry, Buffer, which every running JVM has initialised) have
 * trivial static initialisers: constants and empty AtomicLongs, nothing that
 * loads a library or blocks.
 *
 * The figures, as BufferPoolMXBean computes them (javap on JDK 17 and 25):
 *   direct  java.nio.Bits: static final AtomicLong COUNT, TOTAL_CAPACITY,
 *           RESERVED_MEMORY (memory used); each AtomicLong's long "value".
 *   mapped  sun.nio.ch.FileChannelImpl$DefaultUnmapper: static int count,
 *           long totalCapacity, long totalSize (memory used).
 *   cache   every live platform thread's thread-local maps: Thread.threadLocals
 *           and, on JDK 19+, Thread.holder.terminatingThreadLocals (where
 *           TerminatingThreadLocal values such as the buffer cache live; a
 *           virtual thread's cache is its carrier's, so walking platform
 *           threads covers carriers too). Each map's Entry[] table holds
 *           entries whose "value" may be a sun.nio.ch.Util$BufferCache, with
 *           ByteBuffer[] buffers, int count and int start (a ring); the
 *           cached bytes are the buffers' java.nio.Buffer.capacity.
 * The counters are read one field at a time while the JVM runs, as the
 * MXBean reads them; a thread changing its cache during the walk may be
 * counted with one buffer more or less.
 *
 * Bounded: the walk is O(threads + cache entries) JNI reads and stops
 * counting the cache (and leaves it out of the answer) past MAX_THREADS
 * threads. Memory: JNI local references inside one local frame, each
 * released as soon as it is read; the JVM mallocs for the attached thread.
 */
#define _GNU_SOURCE

#include "agent_jvm.h"
#include "agent_sock.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef MEMTRIMD_AGENT_NO_JNI

void agent_jvm_configure(void) {}

void* agent_jvm_started_vm(char* why, size_t why_cap) {
  snprintf(why, why_cap, "agent built without jni.h: no JVM support");
  return NULL;
}

const char* agent_jvm_library(void) { return ""; }

long agent_jvm_buffers(char* buf, size_t cap, char* why, size_t why_cap) {
  (void)buf;
  (void)cap;
  snprintf(why, why_cap, "agent built without jni.h: no JVM support");
  return -1;
}

#else

#include <jni.h>

/* Beyond this many live threads the cache walk is skipped (its keys are left
 * out): the pools are still read. */
#define MAX_THREADS 100000

static int g_enabled = 1;

/* libjvm.so's exports for java.base's native code (see the top). */
typedef jclass(JNICALL* find_loaded_fn)(JNIEnv*, jobject, jstring);
typedef jobjectArray(JNICALL* all_threads_fn)(JNIEnv*, jclass);
static find_loaded_fn g_find_loaded;
static all_threads_fn g_all_threads;

void agent_jvm_configure(void) {
  const char* v = getenv("MEMTRIMD_AGENT_JVM");
  g_enabled = !(v != NULL && strcmp(v, "0") == 0);
}

/* ---- Finding the JVM ---- */

static char g_libjvm[PATH_MAX];

static int find_libjvm(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  (void)data;
  const char* name = info->dlpi_name;
  size_t n = name != NULL ? strlen(name) : 0;
  static const char suffix[] = "/libjvm.so";
  if (n >= sizeof suffix - 1 && n < sizeof g_libjvm &&
      strcmp(name + n - (sizeof suffix - 1), suffix) == 0) {
    memcpy(g_libjvm, name, n + 1);
    return 1;
  }
  return 0;
}

/* The created JavaVM, or NULL with the reason. The library list is checked
 * first: in a program without libjvm.so, a failing dlsym would malloc its
 * error text on the agent thread, which never mallocs (memtrimd_agent.c). */
static JavaVM* created_vm(char* why, size_t why_cap) {
  g_libjvm[0] = '\0';
  if (dl_iterate_phdr(find_libjvm, NULL) == 0) {
    snprintf(why, why_cap, "not a JVM (libjvm.so is not loaded)");
    return NULL;
  }
  /* The java launcher loads libjvm.so RTLD_GLOBAL, but an embedding program
   * may not: ask the library itself. NOLOAD: never load anything. */
  void* lib = dlopen(g_libjvm, RTLD_LAZY | RTLD_NOLOAD);
  if (lib == NULL) {
    snprintf(why, why_cap, "not a JVM (libjvm.so cannot be opened)");
    return NULL;
  }
  typedef jint(JNICALL * created_fn)(JavaVM**, jsize, jsize*);
  created_fn created = (created_fn)dlsym(lib, "JNI_GetCreatedJavaVMs");
  g_find_loaded = (find_loaded_fn)dlsym(lib, "JVM_FindLoadedClass");
  g_all_threads = (all_threads_fn)dlsym(lib, "JVM_GetAllThreads");
  JavaVM* vm = NULL;
  jsize n = 0;
  if (created == NULL || g_find_loaded == NULL || g_all_threads == NULL) {
    snprintf(why, why_cap, "not a HotSpot JVM (libjvm.so lacks the JVM_ functions used)");
  } else if (created(&vm, 1, &n) != JNI_OK || n < 1) {
    vm = NULL;
    snprintf(why, why_cap, "not a JVM (no Java VM created yet)");
  }
  /* The launcher's own reference keeps libjvm.so loaded. */
  dlclose(lib);
  return vm;
}

/* ---- Whether the JVM has finished starting ----
 *
 * Before JDK 21 (JDK-8308341) JNI_GetCreatedJavaVMs returns the VM as soon
 * as its creation has begun, and attaching to a half-created VM can crash
 * it: the first sample of a sidecar lands right there, and a JVM that
 * pre-touches a large heap stays there for seconds. The JVM's own mark of a
 * finished start is the perf data counter sun.rt.createVmEndTime (what
 * jstat reads). The counters live in the JVM's perf memory, which is the
 * hsperfdata file mapped into it only when the JVM could make that file: a
 * uid without a user name (runAsUser in a pod) gets none, and neither does
 * -XX:+PerfDisableSharedMem; then the same counters sit in anonymous memory.
 * So the memory is found where the JVM's serviceability agent finds it:
 * PerfMemory::_prologue in the table libjvm.so exports for it
 * (gHotSpotVMStructs), set once at the start of VM creation and never
 * unmapped. The file's mapping in /proc/self/maps is the fallback for a
 * libjvm.so without that table entry. Without perf memory at all
 * (-XX:-UsePerfData) only JDK 21+ is trusted, told by the "release" file of
 * the libjvm.so's JDK. */

/* The perf memory through libjvm.so's exported VMStructs table: the
 * addresses of PerfMemory::_prologue and PerfMemory::_capacity, then their
 * values. 0 when found; -1 when the table has no such entry or the JVM has
 * no perf memory (not yet: the pointers are set early in VM creation; or
 * none: -XX:-UsePerfData). Reads libjvm.so's static data only: no JNI, no
 * call into the VM. */
static int vmstructs_perfdata(uintptr_t* start, size_t* size) {
  void* lib = dlopen(g_libjvm, RTLD_LAZY | RTLD_NOLOAD);
  if (lib == NULL) {
    return -1;
  }
  char* const* table = (char* const*)dlsym(lib, "gHotSpotVMStructs");
  const uint64_t* stride = (const uint64_t*)dlsym(lib, "gHotSpotVMStructEntryArrayStride");
  const uint64_t* type_at = (const uint64_t*)dlsym(lib, "gHotSpotVMStructEntryTypeNameOffset");
  const uint64_t* field_at = (const uint64_t*)dlsym(lib, "gHotSpotVMStructEntryFieldNameOffset");
  const uint64_t* addr_at = (const uint64_t*)dlsym(lib, "gHotSpotVMStructEntryAddressOffset");
  /* The launcher's own reference keeps libjvm.so loaded. */
  dlclose(lib);
  if (table == NULL || *table == NULL || stride == NULL || type_at == NULL || field_at == NULL ||
      addr_at == NULL || *stride == 0 || *stride > 4096 || *type_at + sizeof(char*) > *stride ||
      *field_at + sizeof(char*) > *stride || *addr_at + sizeof(void*) > *stride) {
    return -1;
  }
  void* const* prologue_at = NULL;
  const size_t* capacity_at = NULL;
  /* The table ends with an entry whose type name is NULL (about 2000
   * entries in JDK 17 and 25); the bound only guards against a table that
   * is not what the exports say. */
  for (size_t i = 0; i < 100000 && (prologue_at == NULL || capacity_at == NULL); ++i) {
    const char* entry = *table + i * *stride;
    const char* type;
    const char* field;
    void* address;
    memcpy(&type, entry + *type_at, sizeof type);
    if (type == NULL) {
      break;
    }
    if (strcmp(type, "PerfMemory") != 0) {
      continue;
    }
    memcpy(&field, entry + *field_at, sizeof field);
    memcpy(&address, entry + *addr_at, sizeof address);
    if (field == NULL || address == NULL) {
      continue;
    }
    if (strcmp(field, "_prologue") == 0) {
      prologue_at = (void* const*)address;
    } else if (strcmp(field, "_capacity") == 0) {
      capacity_at = (const size_t*)address;
    }
  }
  if (prologue_at == NULL || capacity_at == NULL) {
    return -1;
  }
  /* Written once, by the thread creating the VM, before the counters. */
  void* prologue = __atomic_load_n((void* const*)prologue_at, __ATOMIC_ACQUIRE);
  size_t capacity = __atomic_load_n(capacity_at, __ATOMIC_ACQUIRE);
  if (prologue == NULL || capacity < 32) {
    return -1;
  }
  *start = (uintptr_t)prologue;
  *size = capacity;
  return 0;
}

/* Reads /proc/self/maps a buffer at a time and finds the mapping of the
 * JVM's hsperfdata file (.../hsperfdata_<user>/<pid>). 0 when found. The
 * agent thread opens no descriptor: the socket task reads each piece
 * (agent_sock.c). */
static int find_perfdata(uintptr_t* start, size_t* size) {
  char name[32];
  snprintf(name, sizeof name, "/%d", (int)getpid());
  char buf[8192];
  size_t have = 0;
  uint64_t offset = 0;
  int found = -1;
  for (;;) {
    long n = agent_sock_read("/proc/self/maps", offset, buf + have, sizeof buf - have);
    if (n <= 0) {
      break;
    }
    offset += (uint64_t)n;
    have += (size_t)n;
    buf[have] = '\0';
    char* line = buf;
    char* nl;
    while ((nl = strchr(line, '\n')) != NULL) {
      *nl = '\0';
      const char* dir = strstr(line, "/hsperfdata_");
      size_t len = (size_t)(nl - line);
      size_t nlen = strlen(name);
      if (found != 0 && dir != NULL && len > nlen && strcmp(nl - nlen, name) == 0) {
        unsigned long lo = 0, hi = 0;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && hi > lo) {
          *start = (uintptr_t)lo;
          *size = (size_t)(hi - lo);
          found = 0;
        }
      }
      line = nl + 1;
    }
    have = strlen(line);
    if (have == sizeof buf - 1) {
      have = 0; /* a line longer than the buffer: not a path we look for */
    } else {
      memmove(buf, line, have);
    }
  }
  return found;
}

static int32_t i32_at(const unsigned char* p) {
  int32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* 1: sun.rt.createVmEndTime is set; 0: not (yet); -1: no usable
 * perf memory. The JVM appends entries while it starts: every read is
 * bounded by the mapping and the prologue's "used", so a half-written entry
 * is at worst not found (the next request asks again). */
static int perfdata_vm_created(void) {
  uintptr_t start;
  size_t size;
  if ((vmstructs_perfdata(&start, &size) != 0 && find_perfdata(&start, &size) != 0) || size < 32) {
    return -1;
  }
  const unsigned char* base = (const unsigned char*)start;
  /* Magic 0xCAFEC0C0 (big-endian bytes), little-endian data. */
  if (base[0] != 0xCA || base[1] != 0xFE || base[2] != 0xC0 || base[3] != 0xC0 || base[4] != 1) {
    return -1;
  }
  int32_t used = i32_at(base + 8);
  int32_t offset = i32_at(base + 24);
  int32_t entries = i32_at(base + 28);
  size_t limit = used > 0 && (size_t)used < size ? (size_t)used : size;
  static const char wanted[] = "sun.rt.createVmEndTime";
  for (int32_t i = 0; i < entries && offset > 0 && (size_t)offset + 20 <= limit; ++i) {
    const unsigned char* e = base + offset;
    int32_t length = i32_at(e);
    int32_t name_at = i32_at(e + 4);
    int32_t vector = i32_at(e + 8);
    int32_t data_at = i32_at(e + 16);
    if (length < 20 || (size_t)offset + (size_t)length > limit) {
      return 0;
    }
    if (vector == 0 && e[12] == 'J' && name_at > 0 && name_at < length &&
        (size_t)name_at + sizeof wanted <= (size_t)length &&
        memcmp(e + name_at, wanted, sizeof wanted) == 0 && data_at > 0 &&
        (size_t)data_at + 8 <= (size_t)length) {
      int64_t v;
      memcpy(&v, e + data_at, sizeof v);
      return v != 0;
    }
    offset += length;
  }
  return 0;
}

/* The feature version (17, 21, 25) from JAVA_VERSION in the "release" file
 * of the JDK whose libjvm.so is loaded (<home>/lib/server/libjvm.so); 0 if
 * unknown. */
static int jdk_feature(void) {
  char path[PATH_MAX];
  size_t n = strlen(g_libjvm);
  memcpy(path, g_libjvm, n + 1);
  for (int up = 0; up < 3; ++up) { /* libjvm.so, server, lib */
    char* slash = strrchr(path, '/');
    if (slash == NULL) {
      return 0;
    }
    *slash = '\0';
  }
  if (strlen(path) + sizeof "/release" > sizeof path) {
    return 0;
  }
  strcat(path, "/release");
  char buf[4096];
  if (agent_sock_read(path, 0, buf, sizeof buf) <= 0) { /* NUL-terminated */
    return 0;
  }
  const char* v = strstr(buf, "JAVA_VERSION=\"");
  if (v == NULL) {
    return 0;
  }
  v += strlen("JAVA_VERSION=\"");
  if (strncmp(v, "1.", 2) == 0) {
    v += 2; /* 1.8.0 and older */
  }
  return atoi(v);
}

/* 0 when the VM may be attached; else -1 with the reason. */
static int vm_started(char* why, size_t why_cap) {
  int created = perfdata_vm_created();
  if (created == 1) {
    return 0;
  }
  if (created == 0) {
    snprintf(why, why_cap, "the JVM is still starting (sun.rt.createVmEndTime not set)");
    return -1;
  }
  int feature = jdk_feature();
  if (feature >= 21) {
    return 0;
  }
  snprintf(why, why_cap,
           "cannot tell whether the JVM has finished starting: it has no perf data "
           "(-XX:-UsePerfData) on JDK %d",
           feature);
  return -1;
}

/* ---- Classes ---- */

enum { K_BITS, K_UNMAPPER, K_THREAD, K_HOLDER, K_MAP, K_ENTRY, K_CACHE, K_BUFFER, K_COUNT };

/* Binary names, as Class.forName spells them. */
static const char* const k_names[K_COUNT] = {
    "java.nio.Bits",
    "sun.nio.ch.FileChannelImpl$DefaultUnmapper",
    "java.lang.Thread",
    "java.lang.Thread$FieldHolder",
    "java.lang.ThreadLocal$ThreadLocalMap",
    "java.lang.ThreadLocal$ThreadLocalMap$Entry",
    "sun.nio.ch.Util$BufferCache",
    "java.nio.Buffer",
};

/* Global references, kept across requests: the boot loader never unloads a
 * class, so a found class stays valid for the life of the JVM. */
static jclass g_class[K_COUNT];

/* Fills the missing g_class entries with the classes the boot loader has
 * loaded by now (a class that is not loaded yet is looked for again at the
 * next request). */
static void find_classes(JNIEnv* env) {
  for (int i = 0; i < K_COUNT; ++i) {
    if (g_class[i] != NULL) {
      continue;
    }
    jstring name = (*env)->NewStringUTF(env, k_names[i]);
    if (name == NULL) {
      (*env)->ExceptionClear(env);
      return;
    }
    jclass k = g_find_loaded(env, NULL, name);
    if ((*env)->ExceptionCheck(env)) {
      (*env)->ExceptionClear(env);
      k = NULL;
    }
    if (k != NULL) {
      g_class[i] = (jclass)(*env)->NewGlobalRef(env, k);
      (*env)->DeleteLocalRef(env, k);
    }
    (*env)->DeleteLocalRef(env, name);
  }
}

static int loaded(int k) { return g_class[k] != NULL; }

/* A missing field (another JDK's layout) throws NoSuchFieldError: clear it
 * and say which. */
static jfieldID field(JNIEnv* env, int k, int is_static, const char* name, const char* sig,
                      const char** missing) {
  jfieldID id = is_static ? (*env)->GetStaticFieldID(env, g_class[k], name, sig)
                          : (*env)->GetFieldID(env, g_class[k], name, sig);
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
    id = NULL;
  }
  if (id == NULL && *missing == NULL) {
    *missing = name;
  }
  return id;
}

/* ---- Pools ---- */

struct pool {
  uint64_t count, capacity, used;
};

static uint64_t nonneg(jlong v) { return v < 0 ? 0 : (uint64_t)v; }

/* AtomicLong static `name` of Bits: its "value". */
static int atomic_static(JNIEnv* env, const char* name, uint64_t* out, const char** missing) {
  jfieldID id = field(env, K_BITS, 1, name, "Ljava/util/concurrent/atomic/AtomicLong;", missing);
  if (id == NULL) {
    return -1;
  }
  jobject atomic = (*env)->GetStaticObjectField(env, g_class[K_BITS], id);
  if (atomic == NULL) {
    *missing = name;
    return -1;
  }
  jclass atomic_class = (*env)->GetObjectClass(env, atomic);
  jfieldID value = (*env)->GetFieldID(env, atomic_class, "value", "J");
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
    value = NULL;
  }
  if (value != NULL) {
    *out = nonneg((*env)->GetLongField(env, atomic, value));
  } else {
    *missing = "AtomicLong.value";
  }
  (*env)->DeleteLocalRef(env, atomic_class);
  (*env)->DeleteLocalRef(env, atomic);
  return value != NULL ? 0 : -1;
}

static int read_direct(JNIEnv* env, struct pool* p, char* why, size_t why_cap) {
  memset(p, 0, sizeof *p);
  if (!loaded(K_BITS)) {
    return 0; /* no direct buffer was ever made */
  }
  const char* missing = NULL;
  if (atomic_static(env, "COUNT", &p->count, &missing) != 0 ||
      atomic_static(env, "TOTAL_CAPACITY", &p->capacity, &missing) != 0 ||
      atomic_static(env, "RESERVED_MEMORY", &p->used, &missing) != 0) {
    snprintf(why, why_cap, "direct pool: java.nio.Bits has no %s on this JDK", missing);
    return -1;
  }
  return 0;
}

static int read_mapped(JNIEnv* env, struct pool* p, char* why, size_t why_cap) {
  memset(p, 0, sizeof *p);
  if (!loaded(K_UNMAPPER)) {
    return 0; /* nothing was ever mapped */
  }
  const char* missing = NULL;
  jfieldID count = field(env, K_UNMAPPER, 1, "count", "I", &missing);
  jfieldID capacity = field(env, K_UNMAPPER, 1, "totalCapacity", "J", &missing);
  jfieldID size = field(env, K_UNMAPPER, 1, "totalSize", "J", &missing);
  if (missing != NULL) {
    snprintf(why, why_cap, "mapped pool: FileChannelImpl$DefaultUnmapper has no %s on this JDK",
             missing);
    return -1;
  }
  jint c = (*env)->GetStaticIntField(env, g_class[K_UNMAPPER], count);
  p->count = c < 0 ? 0 : (uint64_t)c;
  p->capacity = nonneg((*env)->GetStaticLongField(env, g_class[K_UNMAPPER], capacity));
  p->used = nonneg((*env)->GetStaticLongField(env, g_class[K_UNMAPPER], size));
  return 0;
}

/* ---- The temporary buffer cache ---- */

struct cache_fields {
  jfieldID thread_locals, holder, terminating, table, value, buffers, count, start, capacity;
};

/* Adds one BufferCache's buffers. */
static void add_cache(JNIEnv* env, const struct cache_fields* f, jobject cache, uint64_t* bytes,
                      uint64_t* buffers) {
  jobjectArray ring = (jobjectArray)(*env)->GetObjectField(env, cache, f->buffers);
  if (ring == NULL) {
    return;
  }
  jsize len = (*env)->GetArrayLength(env, ring);
  jint count = (*env)->GetIntField(env, cache, f->count);
  jint start = (*env)->GetIntField(env, cache, f->start);
  if (len > 0 && count > 0 && start >= 0) {
    if (count > len) {
      count = len;
    }
    for (jint i = 0; i < count; ++i) {
      jobject b = (*env)->GetObjectArrayElement(env, ring, (jsize)((start + i) % len));
      if (b == NULL) {
        continue; /* the owner took it out meanwhile */
      }
      jint capacity = (*env)->GetIntField(env, b, f->capacity);
      if (capacity > 0) {
        *bytes += (uint64_t)capacity;
      }
      *buffers += 1;
      (*env)->DeleteLocalRef(env, b);
    }
  }
  (*env)->DeleteLocalRef(env, ring);
}

/* Adds the buffer caches found in one ThreadLocalMap. */
static void walk_map(JNIEnv* env, const struct cache_fields* f, jobject map, uint64_t* bytes,
                     uint64_t* buffers) {
  jobjectArray table = (jobjectArray)(*env)->GetObjectField(env, map, f->table);
  if (table == NULL) {
    return;
  }
  jsize len = (*env)->GetArrayLength(env, table);
  for (jsize i = 0; i < len; ++i) {
    jobject entry = (*env)->GetObjectArrayElement(env, table, i);
    if (entry == NULL) {
      continue;
    }
    jobject value = (*env)->GetObjectField(env, entry, f->value);
    if (value != NULL && (*env)->IsInstanceOf(env, value, g_class[K_CACHE])) {
      add_cache(env, f, value, bytes, buffers);
    }
    if (value != NULL) {
      (*env)->DeleteLocalRef(env, value);
    }
    (*env)->DeleteLocalRef(env, entry);
  }
  (*env)->DeleteLocalRef(env, table);
}

/* 0 and the sums, or -1 when the cache cannot be read on this JDK (or the
 * thread cap was passed): the answer then leaves the cache out. */
static int read_cache(JNIEnv* env, uint64_t* bytes, uint64_t* buffers) {
  *bytes = 0;
  *buffers = 0;
  if (!loaded(K_CACHE)) {
    return 0; /* no thread ever cached a temporary buffer */
  }
  if (!loaded(K_THREAD) || !loaded(K_MAP) || !loaded(K_ENTRY) || !loaded(K_BUFFER)) {
    return -1;
  }
  const char* missing = NULL;
  struct cache_fields f;
  memset(&f, 0, sizeof f);
  f.thread_locals =
      field(env, K_THREAD, 0, "threadLocals", "Ljava/lang/ThreadLocal$ThreadLocalMap;", &missing);
  f.table =
      field(env, K_MAP, 0, "table", "[Ljava/lang/ThreadLocal$ThreadLocalMap$Entry;", &missing);
  f.value = field(env, K_ENTRY, 0, "value", "Ljava/lang/Object;", &missing);
  f.buffers = field(env, K_CACHE, 0, "buffers", "[Ljava/nio/ByteBuffer;", &missing);
  f.count = field(env, K_CACHE, 0, "count", "I", &missing);
  f.start = field(env, K_CACHE, 0, "start", "I", &missing);
  f.capacity = field(env, K_BUFFER, 0, "capacity", "I", &missing);
  if (missing != NULL) {
    return -1;
  }
  /* JDK 19+: TerminatingThreadLocal values (the buffer cache among them)
   * live in Thread.holder.terminatingThreadLocals, not threadLocals. */
  if (loaded(K_HOLDER)) {
    const char* absent = NULL;
    f.holder = field(env, K_THREAD, 0, "holder", "Ljava/lang/Thread$FieldHolder;", &absent);
    f.terminating = field(env, K_HOLDER, 0, "terminatingThreadLocals",
                          "Ljava/lang/ThreadLocal$ThreadLocalMap;", &absent);
    if (absent != NULL) {
      f.holder = NULL;
      f.terminating = NULL;
    }
  }

  jobjectArray threads = g_all_threads(env, NULL);
  if ((*env)->ExceptionCheck(env)) {
    (*env)->ExceptionClear(env);
    threads = NULL;
  }
  if (threads == NULL) {
    return -1;
  }
  jsize n = (*env)->GetArrayLength(env, threads);
  int rc = n > MAX_THREADS ? -1 : 0;
  for (jsize t = 0; rc == 0 && t < n; ++t) {
    jobject thread = (*env)->GetObjectArrayElement(env, threads, t);
    if (thread == NULL) {
      continue;
    }
    jobject map = (*env)->GetObjectField(env, thread, f.thread_locals);
    if (map != NULL) {
      walk_map(env, &f, map, bytes, buffers);
      (*env)->DeleteLocalRef(env, map);
    }
    if (f.terminating != NULL) {
      jobject holder = (*env)->GetObjectField(env, thread, f.holder);
      if (holder != NULL) {
        jobject tmap = (*env)->GetObjectField(env, holder, f.terminating);
        if (tmap != NULL) {
          walk_map(env, &f, tmap, bytes, buffers);
          (*env)->DeleteLocalRef(env, tmap);
        }
        (*env)->DeleteLocalRef(env, holder);
      }
    }
    (*env)->DeleteLocalRef(env, thread);
  }
  (*env)->DeleteLocalRef(env, threads);
  return rc;
}

/* ---- The command ---- */

static long format(char* buf, size_t cap, const struct pool* direct, const struct pool* mapped,
                   int cache_ok, uint64_t cache_bytes, uint64_t cache_buffers) {
  int n = snprintf(buf, cap,
                   "direct_count=%llu\ndirect_capacity=%llu\ndirect_used=%llu\n"
                   "mapped_count=%llu\nmapped_capacity=%llu\nmapped_used=%llu\n",
                   (unsigned long long)direct->count, (unsigned long long)direct->capacity,
                   (unsigned long long)direct->used, (unsigned long long)mapped->count,
                   (unsigned long long)mapped->capacity, (unsigned long long)mapped->used);
  if (n < 0 || (size_t)n >= cap) {
    return -1;
  }
  if (cache_ok) {
    int m = snprintf(buf + n, cap - (size_t)n, "temp_cache_bytes=%llu\ntemp_cache_buffers=%llu\n",
                     (unsigned long long)cache_bytes, (unsigned long long)cache_buffers);
    if (m < 0 || (size_t)m >= cap - (size_t)n) {
      return -1;
    }
    n += m;
  }
  return n;
}

void* agent_jvm_started_vm(char* why, size_t why_cap) {
  if (!g_enabled) {
    snprintf(why, why_cap, "JVM reads are switched off in the target (MEMTRIMD_AGENT_JVM=0)");
    return NULL;
  }
  JavaVM* vm = created_vm(why, why_cap);
  if (vm == NULL || vm_started(why, why_cap) != 0) {
    return NULL;
  }
  return vm;
}

const char* agent_jvm_library(void) { return g_libjvm; }

long agent_jvm_buffers(char* buf, size_t cap, char* why, size_t why_cap) {
  if (!g_enabled) {
    snprintf(why, why_cap, "JVM reads are switched off in the target (MEMTRIMD_AGENT_JVM=0)");
    return -1;
  }
  JavaVM* vm = created_vm(why, why_cap);
  if (vm == NULL || vm_started(why, why_cap) != 0) {
    return -1;
  }
  JNIEnv* env = NULL;
  JavaVMAttachArgs args = {JNI_VERSION_1_8, (char*)"memtrimd-agent", NULL};
  jint rc = (*vm)->AttachCurrentThreadAsDaemon(vm, (void**)&env, &args);
  if (rc != JNI_OK || env == NULL) {
    snprintf(why, why_cap, "cannot attach to the JVM (JNI error %d; is it shutting down?)",
             (int)rc);
    return -1;
  }
  long len = -1;
  if ((*env)->PushLocalFrame(env, 64) != 0) {
    (*env)->ExceptionClear(env);
    snprintf(why, why_cap, "the JVM is out of memory for JNI references");
  } else {
    find_classes(env);
    struct pool direct, mapped;
    uint64_t cache_bytes = 0, cache_buffers = 0;
    if (read_direct(env, &direct, why, why_cap) == 0 &&
        read_mapped(env, &mapped, why, why_cap) == 0) {
      int cache_ok = read_cache(env, &cache_bytes, &cache_buffers) == 0;
      len = format(buf, cap, &direct, &mapped, cache_ok, cache_bytes, cache_buffers);
      if (len < 0) {
        snprintf(why, why_cap, "answer larger than buffer");
      }
    }
    if ((*env)->ExceptionCheck(env)) {
      (*env)->ExceptionClear(env);
    }
    (*env)->PopLocalFrame(env, NULL);
  }
  /* Never stay attached: between requests no thread dump shows memtrimd. */
  (*vm)->DetachCurrentThread(vm);
  return len;
}

#endif
