/*
 * The agent loaded into a running JVM, without a restart: memtrimd
 * (--jvm.load-agent) sends the JVM's attach listener
 * "load <path> true version=<n>", the JVM dlopen()s the library on its
 * "Attach Listener" thread and calls Agent_OnAttach there.
 *
 * The JVM runs a library's constructors before it looks for Agent_OnAttach,
 * and unloads the library when that returns anything but 0. So in a process
 * where a Java VM already exists the constructor starts nothing
 * (agent_in_running_jvm), and Agent_OnAttach decides: a version other than
 * the one memtrimd asked for, another copy of the agent already loaded
 * (preloaded, or loaded by an earlier memtrimd from a file since removed),
 * or MEMTRIMD_AGENT_DISABLE=1 are refused with a code of their own, and the
 * JVM unloads the library again: nothing of it stays. Only a started agent
 * pins itself (agent_pin_self), because its thread and socket task never
 * end.
 *
 * No JVMTI environment is created: on JDK 21+ one switches on JVMTI's
 * notifications of every virtual thread mount and unmount for good
 * (docs/buffer-pools.md); the JNI reads of jvm_buffers need none.
 */
#define _GNU_SOURCE

#include "agent_attach.h"
#include "agent_phdr.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char k_library[] = AGENT_LIBRARY_NAME;

/* ---- Which objects are loaded ---- */

struct scan {
  const char* suffix;  /* wanted: a name ending in this */
  int skip_self;       /* leave out the object holding this code */
  char name[PATH_MAX]; /* the first match */
  int found;
};

/* Whether `name` is `suffix` or ends in "/" + `suffix`. */
static int named(const char* name, const char* suffix) {
  size_t n = strlen(name), s = strlen(suffix);
  if (n < s || strcmp(name + n - s, suffix) != 0) {
    return 0;
  }
  return n == s || name[n - s - 1] == '/';
}

static int scan_one(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size;
  struct scan* s = data;
  const char* name = info->dlpi_name;
  if (name == NULL || name[0] == '\0' || strlen(name) >= sizeof s->name) {
    return 0;
  }
  const int self = agent_object_holds(info, (uintptr_t)&scan_one);
  if (s->suffix != NULL ? (named(name, s->suffix) && !(s->skip_self && self)) : self) {
    memcpy(s->name, name, strlen(name) + 1);
    s->found = 1;
    return 1;
  }
  return 0;
}

/* The loaded object named ...`suffix` (not this one, if `skip_self`), or
 * with `suffix` NULL this library itself; its name in s->name. */
static int find_object(struct scan* s, const char* suffix, int skip_self) {
  memset(s, 0, sizeof *s);
  s->suffix = suffix;
  s->skip_self = skip_self;
  dl_iterate_phdr(scan_one, s);
  return s->found;
}

int agent_in_running_jvm(void) {
  struct scan s;
  if (!find_object(&s, "libjvm.so", 0)) {
    return 0; /* preloaded: the java launcher loads libjvm.so after us */
  }
  /* NOLOAD: never load anything; the launcher's reference keeps it. */
  void* lib = dlopen(s.name, RTLD_LAZY | RTLD_NOLOAD);
  if (lib == NULL) {
    return 0;
  }
  /* JNI_GetCreatedJavaVMs(JavaVM**, jsize, jsize*), without jni.h. */
  typedef int (*created_fn)(void**, int, int*);
  created_fn created = (created_fn)dlsym(lib, "JNI_GetCreatedJavaVMs");
  void* vm = NULL;
  int n = 0;
  const int running = created != NULL && created(&vm, 1, &n) == 0 && n > 0;
  dlclose(lib);
  return running;
}

int agent_other_copy_loaded(void) {
  struct scan s;
  return find_object(&s, k_library, 1);
}

int agent_pin_self(void) {
  struct scan s;
  if (!find_object(&s, NULL, 0)) {
    return -1;
  }
  /* Not closed: the reference is the pin (NODELETE holds it anyway). */
  return dlopen(s.name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE) != NULL ? 0 : -1;
}

long agent_attach_version(const char* options) {
  static const char key[] = AGENT_ATTACH_VERSION_OPTION;
  if (options == NULL) {
    return -1;
  }
  /* Comma-separated "key=value" items; only "version" is known. */
  for (const char* p = options; *p != '\0';) {
    const char* end = strchr(p, ',');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    if (len > sizeof key - 1 && memcmp(p, key, sizeof key - 1) == 0) {
      long v = 0;
      for (size_t i = sizeof key - 1; i < len; ++i) {
        if (p[i] < '0' || p[i] > '9' || v > 1000000) {
          return -2; /* not a number: no version of ours */
        }
        v = v * 10 + (p[i] - '0');
      }
      return v;
    }
    p += len;
    if (*p == ',') {
      ++p;
    }
  }
  return -1;
}
