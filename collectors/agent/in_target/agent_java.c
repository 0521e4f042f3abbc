/*
 * Java frames above a sampled allocation (agent_java.h; the reasoning, with
 * its sources, in docs/java-frames.md).
 *
 * The walk is HotSpot's AsyncGetCallTrace (ASGCT), called from the sample
 * path with a NULL signal context. For a thread in native or VM state (a
 * JNI library's malloc, the JVM's own os::malloc) ASGCT starts from the
 * thread's last-Java-frame anchor and never reads the context; in Java
 * state with no context it finds no top frame and answers a negative
 * count. Negative counts (not a Java thread, GC running, deoptimising,
 * nothing walkable) mean "no Java frames": the sample keeps its native
 * frames and nothing is retried.
 *
 * ASGCT answers only while ClassLoad events are enabled, and names frames
 * by jmethodIDs it never creates: so at the first "sampling on" that wants
 * Java frames, the agent thread (attached to the JVM for the setup, as
 * agent_jvm.c attaches for its reads) makes ONE JVMTI environment, enables
 * ClassLoad and ClassPrepare, and makes the method ids of every loaded
 * class; the ClassPrepare callback makes those of each class prepared
 * later. Not at load: on JDK 21+ a JVMTI environment made in a running JVM
 * turns on the virtual-thread mount notifications for good, a cost a
 * program that is never sampled should not pay. Ids are capped
 * (MAX_METHOD_IDS): each costs the JVM a word it never frees.
 *
 * Names are made at "sites", on the agent thread attached to the JVM: each
 * distinct frame's class, method, source file and line (from its bytecode
 * index and the method's line table). A method whose class was unloaded
 * since the sample is an id JVMTI refuses (JVMTI_ERROR_INVALID_METHODID):
 * it is named "[java: unknown method]".
 */
#define _GNU_SOURCE

#include "agent_java.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/agent/agent_protocol.h"
#include "sampler_state.h"

int g_java_walk;

/* Switched off by the environment (constructor). */
static int g_java_refused;

void agent_java_configure(void) {
  const char* v = getenv(AGENT_ENV_JAVA_FRAMES);
  const char* jvm = getenv(AGENT_ENV_JVM);
  g_java_refused = (v != NULL && strcmp(v, "0") == 0) || (jvm != NULL && strcmp(jvm, "0") == 0);
}

#ifdef MEMTRIMD_AGENT_NO_JNI

void agent_java_start(int want) { (void)want; }
void agent_java_stop(void) {}
int agent_java_walk(uintptr_t* out, int room) {
  (void)out;
  (void)room;
  return 0;
}
void agent_java_head(struct out* head) {
  put_kv(head, "java_frames", 0);
  put_kv(head, "java_ids", 0);
  put_kv(head, "java_walks", 0);
  put_kv(head, "java_walks_empty", 0);
}
void agent_java_names_begin(void) {}
void agent_java_names_add(const uintptr_t* frames, uint32_t n, struct out* o) {
  (void)frames;
  (void)n;
  (void)o;
}
uint64_t agent_java_names_end(void) { return 0; }

#else

#include <dlfcn.h>
#include <jni.h>
#include <jvmti.h>

#include "agent_jvm.h"

/* Method ids made at most (each a word the JVM never frees, and a
 * GetClassMethods array on the way): past it, classes prepared later get
 * none, and their frames come back from ASGCT without a method. */
#define MAX_METHOD_IDS (1u << 21)

/* ASGCT's types (forte.cpp; no JDK header declares them). */
typedef struct {
  jint lineno; /* the bytecode index; -3 for a native method */
  jmethodID method_id;
} asgct_frame;

typedef struct {
  JNIEnv* env_id;
  jint num_frames;
  asgct_frame* frames;
} asgct_trace;

typedef void (*asgct_fn)(asgct_trace*, jint, void*);

static JavaVM* g_vm;
static jvmtiEnv* g_jvmti;
static asgct_fn g_asgct;
static int g_want;   /* the last "sampling on"'s java= option */
static int g_failed; /* the setup failed for good in this JVM */
static int g_events; /* ClassLoad and ClassPrepare enabled (agent thread only) */
static uint64_t g_ids, g_classes, g_capped, g_walks, g_walks_empty;
/* The process the JVM runs in: a forked child's thread still looks like a
 * Java thread to GetEnv (its TLS is the parent's), but has no JVM. */
static int g_jvm_pid;

/* ---- Method ids ---- */

/* GetClassMethods makes the ids of a prepared class's methods; a class not
 * yet prepared is answered later by ClassPrepare. */
static void make_ids(jvmtiEnv* jvmti, jclass klass) {
  if (LOAD(g_ids) >= MAX_METHOD_IDS) {
    ADD(g_capped, 1);
    return;
  }
  jint n = 0;
  jmethodID* methods = NULL;
  if ((*jvmti)->GetClassMethods(jvmti, klass, &n, &methods) == JVMTI_ERROR_NONE) {
    ADD(g_ids, (uint64_t)(n > 0 ? n : 0));
    ADD(g_classes, 1);
    (*jvmti)->Deallocate(jvmti, (unsigned char*)methods);
  }
}

static void JNICALL on_class_load(jvmtiEnv* jvmti, JNIEnv* env, jthread thread, jclass klass) {
  /* Enabled only because ASGCT answers -1 without it. */
  (void)jvmti;
  (void)env;
  (void)thread;
  (void)klass;
}

static void JNICALL on_class_prepare(jvmtiEnv* jvmti, JNIEnv* env, jthread thread, jclass klass) {
  (void)env;
  (void)thread;
  make_ids(jvmti, klass);
}

/* The ids of every class loaded now. Called after ClassPrepare is on: a
 * class prepared meanwhile is done twice, which makes no second id. */
static void make_all_ids(JNIEnv* env, jvmtiEnv* jvmti) {
  jint count = 0;
  jclass* classes = NULL;
  if ((*jvmti)->GetLoadedClasses(jvmti, &count, &classes) == JVMTI_ERROR_NONE) {
    /* GetLoadedClasses made a local reference of every class in this
     * thread's frame, which JNI promises room for only 16 of: say how many
     * there are, or -Xcheck:jni warns at the next JNI call ("JNI local refs:
     * 992, exceeds capacity: 32"). Refused past MaxJNILocalCapacity (65,536
     * classes): the references are there all the same, and such a JVM run
     * with -Xcheck:jni gets that one warning. */
    if ((*env)->EnsureLocalCapacity(env, count) != JNI_OK) {
      (*env)->ExceptionClear(env);
    }
    for (jint i = 0; i < count; ++i) {
      make_ids(jvmti, classes[i]);
      (*env)->DeleteLocalRef(env, classes[i]);
    }
    (*jvmti)->Deallocate(jvmti, (unsigned char*)classes);
  }
}

/* ClassLoad (ASGCT needs it) and ClassPrepare (ids of new classes) on or
 * off; 0 when the JVM took both. */
static int set_events(jvmtiEnv* jvmti, jvmtiEventMode mode) {
  return (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_CLASS_LOAD, NULL) ==
                     JVMTI_ERROR_NONE &&
                 (*jvmti)->SetEventNotificationMode(jvmti, mode, JVMTI_EVENT_CLASS_PREPARE, NULL) ==
                     JVMTI_ERROR_NONE
             ? 0
             : -1;
}

/* The environment, events and ids; 0 when done. `env` is the agent
 * thread's, attached. */
static int set_up(JavaVM* vm, JNIEnv* env) {
  void* lib = dlopen(agent_jvm_library(), RTLD_LAZY | RTLD_NOLOAD);
  if (lib == NULL) {
    return -1;
  }
  asgct_fn asgct = (asgct_fn)dlsym(lib, "AsyncGetCallTrace");
  dlclose(lib); /* the launcher's own reference keeps libjvm.so loaded */
  if (asgct == NULL) {
    return -1;
  }
  jvmtiEnv* jvmti = NULL;
  if ((*vm)->GetEnv(vm, (void**)&jvmti, JVMTI_VERSION_1_2) != JNI_OK || jvmti == NULL) {
    return -1;
  }
  /* Source files and lines when the JVM can give them; names without. */
  jvmtiCapabilities potential, caps;
  memset(&caps, 0, sizeof caps);
  if ((*jvmti)->GetPotentialCapabilities(jvmti, &potential) == JVMTI_ERROR_NONE) {
    caps.can_get_line_numbers = potential.can_get_line_numbers;
    caps.can_get_source_file_name = potential.can_get_source_file_name;
    (*jvmti)->AddCapabilities(jvmti, &caps);
  }
  jvmtiEventCallbacks callbacks;
  memset(&callbacks, 0, sizeof callbacks);
  callbacks.ClassLoad = on_class_load;
  callbacks.ClassPrepare = on_class_prepare;
  if ((*jvmti)->SetEventCallbacks(jvmti, &callbacks, (jint)sizeof callbacks) != JVMTI_ERROR_NONE ||
      set_events(jvmti, JVMTI_ENABLE) != 0) {
    (*jvmti)->DisposeEnvironment(jvmti);
    return -1;
  }
  make_all_ids(env, jvmti);
  g_events = 1;
  g_jvmti = jvmti;
  g_asgct = asgct;
  g_vm = vm;
  g_jvm_pid = (int)getpid();
  return 0;
}

void agent_java_start(int want) {
  g_want = want;
  if (!want || g_java_refused || g_failed) {
    __atomic_store_n(&g_java_walk, 0, __ATOMIC_RELEASE);
    return;
  }
  if (g_jvmti == NULL) {
    char why[160];
    JavaVM* vm = agent_jvm_started_vm(why, sizeof why);
    if (vm == NULL) {
      return; /* not a JVM, or not started yet: asked again at "sites" */
    }
    JNIEnv* env = NULL;
    JavaVMAttachArgs args = {JNI_VERSION_1_8, (char*)"memtrimd-agent", NULL};
    if ((*vm)->AttachCurrentThreadAsDaemon(vm, (void**)&env, &args) != JNI_OK || env == NULL) {
      return;
    }
    if (set_up(vm, env) != 0) {
      g_failed = 1;
    }
    /* Never stay attached: between requests no thread dump shows memtrimd. */
    (*vm)->DetachCurrentThread(vm);
  } else if (!g_events && (int)getpid() == g_jvm_pid) {
    /* On again after "off": the events back, and the ids of the classes
     * loaded while they were off. */
    JNIEnv* env = NULL;
    JavaVMAttachArgs args = {JNI_VERSION_1_8, (char*)"memtrimd-agent", NULL};
    if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, &args) != JNI_OK || env == NULL) {
      return;
    }
    if (set_events(g_jvmti, JVMTI_ENABLE) == 0) {
      g_events = 1;
      make_all_ids(env, g_jvmti);
    }
    (*g_vm)->DetachCurrentThread(g_vm);
  }
  __atomic_store_n(&g_java_walk, g_jvmti != NULL && g_events, __ATOMIC_RELEASE);
}

void agent_java_stop(void) {
  __atomic_store_n(&g_java_walk, 0, __ATOMIC_RELEASE);
  if (g_jvmti == NULL || !g_events || (int)getpid() != g_jvm_pid) {
    return;
  }
  JNIEnv* env = NULL;
  JavaVMAttachArgs args = {JNI_VERSION_1_8, (char*)"memtrimd-agent", NULL};
  if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, &args) != JNI_OK || env == NULL) {
    return;
  }
  if (set_events(g_jvmti, JVMTI_DISABLE) == 0) {
    g_events = 0;
  }
  (*g_vm)->DetachCurrentThread(g_vm);
}

/* ---- The walk (sample path) ---- */

static uintptr_t encode(jmethodID method, jint bci) {
  uintptr_t id = (uintptr_t)method;
  if (id > AGENT_JAVA_FRAME_METHOD_MASK) {
    id = 0; /* not a user address of 47 bits: an unknown method */
  }
  return (uintptr_t)AGENT_JAVA_FRAME_TAG |
         ((uintptr_t)((uint16_t)bci) << AGENT_JAVA_FRAME_BCI_SHIFT) | id;
}

int agent_java_walk(uintptr_t* out, int room) {
  JavaVM* vm = g_vm;
  if (room <= 0 || vm == NULL || g_asgct == NULL || (int)getpid() != g_jvm_pid) {
    return 0;
  }
  /* A thread the JVM does not know (a plain pthread, a GC worker) is
   * JNI_EDETACHED: a thread-local read in the JVM, no lock. */
  JNIEnv* env = NULL;
  if ((*vm)->GetEnv(vm, (void**)&env, JNI_VERSION_1_6) != JNI_OK || env == NULL) {
    return 0;
  }
  asgct_frame frames[MAX_FRAMES];
  asgct_trace trace = {env, 0, frames};
  g_asgct(&trace, room < MAX_FRAMES ? room : MAX_FRAMES, NULL);
  ADD(g_walks, 1);
  if (trace.num_frames <= 0) {
    ADD(g_walks_empty, 1);
    return 0;
  }
  const int n = trace.num_frames < room ? trace.num_frames : room;
  for (int i = 0; i < n; ++i) {
    out[i] = encode(frames[i].method_id, frames[i].lineno);
  }
  return n;
}

void agent_java_head(struct out* head) {
  put_kv(head, "java_frames", (uint64_t)(LOAD(g_java_walk) != 0));
  put_kv(head, "java_ids", LOAD(g_ids));
  put_kv(head, "java_walks", LOAD(g_walks));
  put_kv(head, "java_walks_empty", LOAD(g_walks_empty));
}

/* ---- Names ("sites", agent thread) ---- */

/* The distinct frames named in this answer: open addressing, 0 empty. */
#define SEEN_SLOTS 16384u
static uintptr_t g_seen[SEEN_SLOTS];
static uint64_t g_named;
static JNIEnv* g_names_env;

static int g_attach_tried;

void agent_java_names_begin(void) {
  memset(g_seen, 0, sizeof g_seen);
  g_named = 0;
  g_names_env = NULL;
  g_attach_tried = 0;
  /* Wanted, but the JVM was still starting at "on": try again now. */
  if (g_want && g_jvmti == NULL && !g_failed && !g_java_refused) {
    agent_java_start(1);
  }
}

/* Attached at the first Java frame of an answer: an answer without any
 * costs the JVM nothing. */
static void attach_for_names(void) {
  if (g_attach_tried || g_jvmti == NULL || g_vm == NULL) {
    return;
  }
  g_attach_tried = 1;
  JNIEnv* env = NULL;
  JavaVMAttachArgs args = {JNI_VERSION_1_8, (char*)"memtrimd-agent", NULL};
  if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void**)&env, &args) == JNI_OK && env != NULL) {
    g_names_env = env;
  }
}

uint64_t agent_java_names_end(void) {
  if (g_names_env != NULL) {
    (*g_vm)->DetachCurrentThread(g_vm);
    g_names_env = NULL;
  }
  return g_named;
}

/* 1 when `f` is new to this answer (and now remembered); 0 when seen, or
 * when the table is full (the frame is then not named: the daemon shows
 * it unnamed). */
static int first_time(uintptr_t f) {
  uint64_t h = (uint64_t)f * 0x9e3779b97f4a7c15ull;
  for (uint32_t i = 0; i < 64; ++i) {
    const uint32_t at = (uint32_t)((h >> 40) + i) % SEEN_SLOTS;
    if (g_seen[at] == f) {
      return 0;
    }
    if (g_seen[at] == 0) {
      g_seen[at] = f;
      return 1;
    }
  }
  return 0;
}

/* Bytes a name keeps before encoding (the line stays bounded). */
#define NAME_MAX_BYTES 400

/* `s` with every byte that would break the line's fields (space and below,
 * '%', DEL and above) as %XX, at most NAME_MAX_BYTES of it. */
static void put_escaped(struct out* o, const char* s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  if (n > NAME_MAX_BYTES) {
    n = NAME_MAX_BYTES;
  }
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = (unsigned char)s[i];
    char b[4];
    if (c <= ' ' || c == '%' || c >= 0x7f) {
      b[0] = '%';
      b[1] = hex[c >> 4];
      b[2] = hex[c & 15];
      b[3] = '\0';
    } else {
      b[0] = (char)c;
      b[1] = '\0';
    }
    put_str(o, b);
  }
}

/* The line of a bytecode index in the method's line table; 0 unknown. */
static jint line_of(jvmtiEnv* jvmti, jmethodID m, jint bci) {
  jint n = 0;
  jvmtiLineNumberEntry* table = NULL;
  if (bci < 0 || (*jvmti)->GetLineNumberTable(jvmti, m, &n, &table) != JVMTI_ERROR_NONE) {
    return 0;
  }
  jint line = 0;
  jlocation best = -1;
  for (jint i = 0; i < n; ++i) {
    if (table[i].start_location <= bci && table[i].start_location > best) {
      best = table[i].start_location;
      line = table[i].line_number;
    }
  }
  (*jvmti)->Deallocate(jvmti, (unsigned char*)table);
  return line;
}

/* "java <frame> <line> <name> <file>": name "package.Class.method", file
 * "-" when unknown. */
static void name_frame(uintptr_t f, struct out* o) {
  jvmtiEnv* jvmti = g_jvmti;
  JNIEnv* env = g_names_env;
  jmethodID m = (jmethodID)(f & AGENT_JAVA_FRAME_METHOD_MASK);
  const uint16_t raw_bci = (uint16_t)((f >> AGENT_JAVA_FRAME_BCI_SHIFT) & 0xffffu);
  const jint bci = raw_bci >= AGENT_JAVA_FRAME_NO_BCI ? -1 : (jint)raw_bci;
  char line[3 * NAME_MAX_BYTES * 2 + 128];
  struct out l = {line, 0, sizeof line, 0};
  put_str(&l, AGENT_SITES_JAVA " ");
  put_hex(&l, f);
  jclass klass = NULL;
  char* sig = NULL;
  char* name = NULL;
  char* file = NULL;
  int pushed = 0;
  if (m != NULL && env != NULL && jvmti != NULL && (*env)->PushLocalFrame(env, 8) == 0) {
    pushed = 1;
    /* A stale id (its class unloaded) is refused here, before any read of
     * the method: JVMTI_ERROR_INVALID_METHODID. */
    if ((*jvmti)->GetMethodDeclaringClass(jvmti, m, &klass) != JVMTI_ERROR_NONE ||
        (*jvmti)->GetClassSignature(jvmti, klass, &sig, NULL) != JVMTI_ERROR_NONE ||
        (*jvmti)->GetMethodName(jvmti, m, &name, NULL, NULL) != JVMTI_ERROR_NONE) {
      klass = NULL;
    } else if ((*jvmti)->GetSourceFileName(jvmti, klass, &file) != JVMTI_ERROR_NONE) {
      file = NULL;
    }
  }
  if (klass != NULL && sig != NULL && name != NULL) {
    put_str(&l, " ");
    put_u64(&l, (uint64_t)line_of(jvmti, m, bci));
    put_str(&l, " ");
    /* "Ljava/util/zip/Deflater;" -> "java.util.zip.Deflater" */
    size_t n = strlen(sig);
    const char* c = sig;
    if (n >= 2 && c[0] == 'L' && c[n - 1] == ';') {
      ++c;
      n -= 2;
    }
    char dotted[NAME_MAX_BYTES];
    size_t k = n < sizeof dotted ? n : sizeof dotted;
    for (size_t i = 0; i < k; ++i) {
      dotted[i] = c[i] == '/' ? '.' : c[i];
    }
    put_escaped(&l, dotted, k);
    put_str(&l, ".");
    put_escaped(&l, name, strlen(name));
    put_str(&l, " ");
    if (file != NULL && file[0] != '\0') {
      put_escaped(&l, file, strlen(file));
    } else {
      put_str(&l, "-");
    }
  } else {
    put_str(&l, " 0 [java:%20unknown%20method] -");
  }
  put_str(&l, "\n");
  if (sig != NULL) {
    (*jvmti)->Deallocate(jvmti, (unsigned char*)sig);
  }
  if (name != NULL) {
    (*jvmti)->Deallocate(jvmti, (unsigned char*)name);
  }
  if (file != NULL) {
    (*jvmti)->Deallocate(jvmti, (unsigned char*)file);
  }
  if (pushed) {
    (*env)->PopLocalFrame(env, NULL);
  }
  if (l.overflow || o->len + l.len > o->cap) {
    return;
  }
  memcpy(o->p + o->len, line, l.len);
  o->len += l.len;
  ++g_named;
}

void agent_java_names_add(const uintptr_t* frames, uint32_t n, struct out* o) {
  for (uint32_t i = 0; i < n; ++i) {
    const uintptr_t f = frames[i];
    if ((f & AGENT_JAVA_FRAME_TAG) != 0 && first_time(f)) {
      attach_for_names();
      name_frame(f, o);
    }
  }
}

#endif
