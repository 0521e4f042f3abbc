/*
 * The agent's wire contract: what memtrimd (client/) and
 * libmemtrimd_agent.so (in_target/) say to each other. Both sides include
 * this file and nothing else holds these names or numbers, so the two cannot
 * drift apart (tests/integration/agent_protocol_test.cc checks the built
 * library against it). Plain C: only macros, usable from C11 and C++.
 *
 * libmemtrimd_agent.so - lets memtrimd ask a glibc program, from outside, to
 * give free heap pages back and to describe its heap, with the calls of
 * whichever allocator serves its malloc: glibc's (malloc_trim), or a
 * jemalloc, tcmalloc or mimalloc that was preloaded or linked in
 * (in_target/agent_allocator.c says how the allocator is found).
 *
 * Load it with LD_PRELOAD, or have memtrimd load it into a running JVM
 * (--jvm.load-agent: the attach "load" command, Agent_OnAttach; see
 * agent_attach.c). Its constructor (there: Agent_OnAttach) starts one
 * detached thread that serves a UNIX stream socket:
 *
 *   path   $MEMTRIMD_AGENT_SOCKET (absolute; every "%p" becomes the pid and
 *          every "%t" the process's start time), or
 *          /tmp/.memtrimd_agent.<pid>.<start>. The pid is getpid(), i.e. the
 *          pid in the program's own pid namespace; the start time is field
 *          22 of /proc/self/stat (clock ticks since boot). When someone
 *          else holds the default name (files planted in the shared /tmp
 *          at the next pids), the same name plus "." and 16 random hex
 *          digits (agent_sock.c). Mode 0600, removed at exit, _exit and
 *          _Exit (agent_exit.c); one a killed process left, memtrimd removes
 *          (client/socket_sweep.cc).
 *   who    SO_PEERCRED uid 0 or the program's euid at the time of the
 *          connection; anyone else has the connection closed without an
 *          answer (counted, see "ping").
 *   ask    one line per connection: "trim", "allocator", "malloc_info",
 *          "mallinfo2", "jvm_buffers", "ping",
 *          "sampling on <T>[ lease=<s>][ max_rate=<n>][ java=<0|1>]",
 *          "sampling off", "sites" or "sites live", ending in '\n'.
 *   answer "<status>\n<body>", then the agent closes. Status 0 = ok,
 *          1 = error (the body says why), 2 = the answer did not fit
 *          the agent's buffer (allocator, malloc_info; the body says
 *          which; version 5, before it status 1).
 *          trim        the allocator's own release call: glibc
 *                      malloc_trim(0), jemalloc mallctl("arena.4096.purge")
 *                      (4096: all arenas), tcmalloc
 *                      MallocExtension_ReleaseFreeMemory(), mimalloc
 *                      mi_collect(true) (after mi_thread_init() on the
 *                      first: agent_allocator.c says why). duration_ns
 *                      (inside the call), rss_before, rss_after (bytes,
 *                      from /proc/self/statm),
 *                      result (malloc_trim's return; 1 for the others),
 *                      allocator (its name), call (malloc_trim,
 *                      arena.4096.purge, ReleaseFreeMemory, mi_collect) and,
 *                      for jemalloc (dirty + muzzy) and tcmalloc (page heap
 *                      free), free_kept_before and free_kept_after, and
 *                      for mimalloc committed_before and committed_after
 *                      (mi_process_info's current commit), read just
 *                      before and after the call. Status 1 when the
 *                      call fails (mallctl's error) or the allocator is
 *                      unknown ("malloc is served by <object>, which has no
 *                      release call memtrimd knows ...")
 *          allocator   allocator (glibc, jemalloc, tcmalloc, mimalloc or
 *                      unknown), object (the file that serves malloc: a
 *                      shared object, or the executable), then that
 *                      allocator's figures in bytes; a figure the allocator
 *                      refuses is left out:
 *                        glibc    arena hblkhd uordblks fordblks keepcost
 *                                 (mallinfo2)
 *                        jemalloc allocated active resident mapped retained
 *                                 metadata (stats.*, after an "epoch"
 *                                 refresh), dirty muzzy (all arenas' pages
 *                                 times arenas.page), dirty_decay_ms
 *                                 muzzy_decay_ms (signed: -1 = never)
 *                        tcmalloc allocated heap_size pageheap_free
 *                                 pageheap_unmapped central_cache_free
 *                                 transfer_cache_free thread_cache_free
 *                        mimalloc committed committed_peak (mi_process_info)
 *          malloc_info the XML of malloc_info(0, ...)
 *          mallinfo2   arena ordblks smblks hblks hblkhd usmblks fsmblks
 *                      uordblks fordblks keepcost
 *          jvm_buffers in a JVM: direct_count, direct_capacity, direct_used,
 *                      mapped_count, mapped_capacity, mapped_used (the
 *                      BufferPoolMXBean figures) and, when the walk could be
 *                      made, temp_cache_bytes and temp_cache_buffers; status
 *                      1 with the reason in any other program, or with
 *                      MEMTRIMD_AGENT_JVM=0 (see agent_jvm.c)
 *          ping        pid, version (7; 6 before Java frames, 5 before
 *                      "sites live", 4
 *                      before the lease and the budget, 3 before the
 *                      sampler, 2 before Agent_OnAttach, 1 before
 *                      "allocator"), refused (connections refused),
 *                      sampling (0/1: the sampler is on), period (the
 *                      period in force; 0 before the first "on"),
 *                      lease_left_ms (0 while off), hooked_now (GOT
 *                      entries holding a hook now: 0 after "off" or the
 *                      lease's end put them back; absent from agents before
 *                      version 7); "ping" never renews the lease
 *          sampling on <T>[ lease=<s>][ max_rate=<n>][ java=<0|1>]
 *                      the allocation sampler (sampler_hooks.c) on, at a
 *                      mean of one sample every T bytes (decimal,
 *                      4096 <= T <= 1 GiB), for a lease of s seconds
 *                      (1 <= s <= 86400, 600 when left out): when no
 *                      "sites" or "sampling on" came for that long the
 *                      agent turns the sampler off by itself (each one
 *                      renews it). At most n samples a second (0: no
 *                      bound; 1000000 at most; 10000 when left out): above
 *                      that the agent raises the period in force, and
 *                      lowers it back towards T when the rate falls
 *                      (sampler_control.c); each sample keeps the weight
 *                      of the period it was drawn at. In a JVM, java=1
 *                      (the default; version 7) walks the Java frames
 *                      above each sampled allocation (in_target/agent_java.c,
 *                      docs/java-frames.md), java=0 does not; the first "on"
 *                      that wants them makes a JVMTI environment and the
 *                      method ids (MEMTRIMD_AGENT_JAVA_FRAMES=0: never).
 *                      Anything else is
 *                      status 1 "bad sampling period or option". The
 *                      malloc family's GOT entries of every loaded object
 *                      hooked (agent_got.c), empty tables. Already on with
 *                      this T: the same answer, lease and budget as asked,
 *                      nothing reset; with another T: restarted from
 *                      empty tables. period (T), generation (one more at
 *                      each start), hooked_objects, hooked_entries,
 *                      lease_s, max_rate, unhooked_objects (objects whose
 *                      allocation calls pass by the hooks: bound to
 *                      another definition, as under RTLD_DEEPBIND, or an
 *                      allocator of their own called directly; added
 *                      without a version: absent from older agents).
 *                      Status 1 with the
 *                      reason when it cannot: MEMTRIMD_AGENT_SAMPLING=0,
 *                      no malloc found at load, mmap failed, an mprotect
 *                      refused (the object named)
 *          sampling off
 *                      every hook a pass-through, then every GOT entry
 *                      put back as the loader wrote it; was_on (0 or 1)
 *          sites       renews the lease. on (0/1), period (in force),
 *                      base_period (the T asked), max_rate, raised (times
 *                      the budget raised the period since "on"), lease_s,
 *                      lease_left_ms (0 while off), lease_ended (times a
 *                      lease ran out, since load), generation, started_ns
 *                      (CLOCK_MONOTONIC of the last "on"), samples (since
 *                      on), live_samples, dropped_live (no room in the live
 *                      table), dropped_stacks (samples counted in the
 *                      "[stack table full]" row), sampler_bytes (its tables'
 *                      mapped bytes), hooked_objects, hooked_entries and
 *                      unhooked_objects (as in "sampling on": absent
 *                      from older agents), truncated=1 when the
 *                      stack list did not fit the answer (the list then
 *                      ends early), stacks (how many stack lines follow),
 *                      then one line per stack of this generation with
 *                      alloc_samples > 0:
 *                        stack <live_samples> <live_bytes> <live_objects>
 *                              <alloc_samples> <alloc_bytes> <alloc_objects>
 *                              <pc1> <pc2> ...
 *                      decimal counts (bytes and objects unbiased
 *                      estimates, rounded), pcs lowercase hex without 0x,
 *                      pc1 the return address in malloc's caller (innermost
 *                      first); the "[stack table full]" row has no pcs.
 *                      In a JVM (version 7) the Java frames follow the
 *                      native pcs, each one word with AGENT_JAVA_FRAME_TAG
 *                      set. The head (version 7) adds java_frames (0/1:
 *                      walked now), java_ids (method ids made), java_walks
 *                      (walks on Java threads), java_walks_empty (of them
 *                      without a Java frame) and java_names (how many java
 *                      lines end the answer, after the live lines):
 *                        java <frame> <line> <name> <file>
 *                      frame the word as in the stack lines, line of its
 *                      bytecode index (0 unknown), name
 *                      "package.Class.method" ("[java: unknown method]"
 *                      for an id the JVM refuses: its class unloaded),
 *                      file the class's source file ("-" unknown); bytes
 *                      at or below space, '%', and DEL and above as %XX
 *          sites live  "sites", and after its stack lines one line per
 *                      live sampled allocation of this generation whose
 *                      stack was listed (version 6):
 *                        live <stack> <ptr> <size> <weight>
 *                      stack the 0-based index of its stack line in this
 *                      answer, ptr lowercase hex without 0x, size the
 *                      bytes asked for, weight the unbiased bytes the
 *                      sample stands for (decimal). The head adds
 *                      live_seen (such samples found) and live_listed
 *                      (lines sent: fewer when the answer's buffer was
 *                      full; the list then ends early). memtrimd reads the
 *                      resident pages of each range from outside.
 *          Bodies other than malloc_info are "key=value\n" lines.
 *
 * Set MEMTRIMD_AGENT_DISABLE=1 to load the library without starting it.
 * MEMTRIMD_AGENT_JVM=0 keeps it out of a JVM's Java state (jvm_buffers then
 * answers status 1); malloc_info and trim still work.
 * MEMTRIMD_AGENT_SAMPLING=0 refuses "sampling on" (status 1 says why).
 * MEMTRIMD_AGENT_JAVA_FRAMES=0 keeps Java frames out of a JVM's samples
 * (no JVMTI environment; version 7).
 *
 */
#ifndef MEMTRIMD_AGENT_PROTOCOL_H
#define MEMTRIMD_AGENT_PROTOCOL_H

/* "ping"'s version, and what memtrimd asks Agent_OnAttach for.
 * 2: "allocator", and "trim" runs the allocator's own release call.
 * 3: Agent_OnAttach: loadable into a running JVM (in_target/agent_attach.c).
 * 4: the allocation sampler ("sampling on|off", "sites").
 * 5: the sampler's lease and sample budget; "ping" says whether it is on.
 * 6: "sites live": the live sampled allocations' ranges and weights.
 * 7: Java frames in a JVM's stacks, named by "java" lines. */
#define AGENT_PROTOCOL_VERSION 7

/* The library's file name: what memtrimd looks for in a target's maps and
 * the agent in its own process. */
#define AGENT_LIBRARY_NAME "libmemtrimd_agent.so"

/* ---- The socket ---- */

/* The default socket path: prefix, pid (in the program's pid namespace), ".",
 * start time (field 22 of /proc/<pid>/stat). */
#define AGENT_SOCKET_PREFIX "/tmp/.memtrimd_agent."
/* The same as a template: "%p" the pid, "%t" the start time. */
#define AGENT_SOCKET_TEMPLATE AGENT_SOCKET_PREFIX "%p.%t"
/* When someone else holds the default name: that name, ".", and this many
 * random lowercase hex digits. */
#define AGENT_SOCKET_RANDOM_DIGITS 16

/* ---- The target's environment ---- */

#define AGENT_ENV_SOCKET "MEMTRIMD_AGENT_SOCKET"     /* a path template instead */
#define AGENT_ENV_DISABLE "MEMTRIMD_AGENT_DISABLE"   /* "1": loaded, not started */
#define AGENT_ENV_JVM "MEMTRIMD_AGENT_JVM"           /* "0": no JNI reads */
#define AGENT_ENV_SAMPLING "MEMTRIMD_AGENT_SAMPLING" /* "0": "sampling on" refused */
/* "0": no Java frames in the sampled stacks (version 7). */
#define AGENT_ENV_JAVA_FRAMES "MEMTRIMD_AGENT_JAVA_FRAMES"

/* ---- Requests: one line each, ending in '\n' ---- */

/* The longest request line without its '\n' (the agent reads at most 64
 * bytes; a longer line is answered "request too long"). */
#define AGENT_REQUEST_MAX_BYTES 62

#define AGENT_VERB_TRIM "trim"
#define AGENT_VERB_ALLOCATOR "allocator"
#define AGENT_VERB_MALLOC_INFO "malloc_info"
#define AGENT_VERB_MALLINFO2 "mallinfo2"
#define AGENT_VERB_JVM_BUFFERS "jvm_buffers"
#define AGENT_VERB_PING "ping"
/* Followed by the period T in decimal, then optionally each option below
 * after a space ("sampling on 524288 lease=120 max_rate=10000"). */
#define AGENT_VERB_SAMPLING_ON "sampling on "
#define AGENT_SAMPLING_LEASE "lease="
#define AGENT_SAMPLING_MAX_RATE "max_rate="
/* Version 7: "java=0" leaves Java frames out of this "on"'s samples;
 * "java=1", the default, walks them in a JVM. */
#define AGENT_SAMPLING_JAVA "java="
#define AGENT_VERB_SAMPLING_OFF "sampling off"
#define AGENT_VERB_SITES "sites"
#define AGENT_VERB_SITES_LIVE "sites live" /* version 6 */
/* Every verb, as a list (tests/integration/agent_protocol_test.cc sends each
 * one; a verb added above belongs here too). */
#define AGENT_VERBS                                                                             \
  AGENT_VERB_TRIM, AGENT_VERB_ALLOCATOR, AGENT_VERB_MALLOC_INFO, AGENT_VERB_MALLINFO2,          \
      AGENT_VERB_JVM_BUFFERS, AGENT_VERB_PING, AGENT_VERB_SAMPLING_ON, AGENT_VERB_SAMPLING_OFF, \
      AGENT_VERB_SITES, AGENT_VERB_SITES_LIVE

/* The sampling period's bounds, in bytes ("bad sampling period" outside). */
#define AGENT_SAMPLING_MIN_PERIOD 4096ull
#define AGENT_SAMPLING_MAX_PERIOD (1ull << 30)
/* The lease, in seconds, and the sample budget, per second. */
#define AGENT_SAMPLING_DEFAULT_LEASE_S 600u
#define AGENT_SAMPLING_MAX_LEASE_S 86400u
#define AGENT_SAMPLING_DEFAULT_MAX_RATE 10000u
#define AGENT_SAMPLING_MAX_RATE_LIMIT 1000000u

/* ---- Answers: "<status>\n<body>" ---- */

#define AGENT_STATUS_OK "0"
#define AGENT_STATUS_ERROR "1"
#define AGENT_STATUS_TOO_LARGE "2"

/* The keys of each "key=value\n" body, as lists (a C array's or a C++
 * std::array's initializer). A key of a list may be left out where the
 * spec above says so; an agent never sends a key outside its verb's list. */
/* The first four always; the free-kept pair where the allocator reports it
 * (jemalloc, tcmalloc), the committed pair under mimalloc. */
#define AGENT_KEYS_TRIM                                                                      \
  "duration_ns", "rss_before", "rss_after", "result", "free_kept_before", "free_kept_after", \
      "committed_before", "committed_after"
/* Words, not numbers: the allocator's name and its release call. */
#define AGENT_KEYS_TRIM_WORDS "allocator", "call"
/* The allocator's name and the object that serves malloc, then its figures. */
#define AGENT_KEYS_ALLOCATOR_WHICH "allocator", "object"
#define AGENT_KEYS_ALLOCATOR_GLIBC "arena", "hblkhd", "uordblks", "fordblks", "keepcost"
#define AGENT_KEYS_ALLOCATOR_JEMALLOC \
  "allocated", "active", "resident", "mapped", "retained", "metadata", "dirty", "muzzy"
#define AGENT_KEYS_ALLOCATOR_JEMALLOC_DECAY "dirty_decay_ms", "muzzy_decay_ms" /* signed */
#define AGENT_KEYS_ALLOCATOR_TCMALLOC                                                   \
  "allocated", "heap_size", "pageheap_free", "pageheap_unmapped", "central_cache_free", \
      "transfer_cache_free", "thread_cache_free"
#define AGENT_KEYS_ALLOCATOR_MIMALLOC "committed", "committed_peak"
#define AGENT_KEYS_MALLINFO2                                                                     \
  "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", \
      "keepcost"
/* The first six always, the temporary buffer cache's two when walked. */
#define AGENT_KEYS_JVM_BUFFERS                                                         \
  "direct_count", "direct_capacity", "direct_used", "mapped_count", "mapped_capacity", \
      "mapped_used", "temp_cache_bytes", "temp_cache_buffers"
/* The first three always; the sampler's from version 5. */
#define AGENT_KEYS_PING \
  "pid", "version", "refused", "sampling", "period", "lease_left_ms", "hooked_now"
/* The first four always; lease_s and max_rate from version 5;
 * unhooked_objects from agents that count it. */
#define AGENT_KEYS_SAMPLING_ON                                                       \
  "period", "generation", "hooked_objects", "hooked_entries", "lease_s", "max_rate", \
      "unhooked_objects"
#define AGENT_KEYS_SAMPLING_OFF "was_on"
/* The head of "sites" ("truncated" only when the list was cut; the last
 * six from version 5); the stack lines follow, each starting with
 * AGENT_SITES_STACK. */
#define AGENT_KEYS_SITES                                                                         \
  "on", "period", "generation", "started_ns", "samples", "live_samples", "dropped_live",         \
      "dropped_stacks", "sampler_bytes", "hooked_objects", "stacks", "truncated", "base_period", \
      "max_rate", "raised", "lease_s", "lease_left_ms", "lease_ended"
/* Added to the head of "sites" without a version (absent from older agents). */
#define AGENT_KEYS_SITES_HOOKS "hooked_entries", "unhooked_objects"
#define AGENT_SITES_STACK "stack"
/* "sites live" only (version 6): its head's two keys besides those of
 * "sites", and the word that starts each live line after the stack lines. */
#define AGENT_KEYS_SITES_LIVE "live_seen", "live_listed"
#define AGENT_SITES_LIVE "live"
/* Version 7: the head's Java frame keys (java_names: how many "java" lines
 * follow the live lines, or the stack lines without "live"), and the word
 * that starts each of those lines. */
#define AGENT_KEYS_SITES_JAVA \
  "java_frames", "java_ids", "java_walks", "java_walks_empty", "java_names"
#define AGENT_SITES_JAVA "java"

/* A Java frame among a stack's pcs (version 7): bit 63 set (never a user
 * address), the bytecode index in bits 47..62 (AGENT_JAVA_FRAME_NO_BCI and
 * above: none, as for a native method), the jmethodID in bits 0..46 (0:
 * a frame whose method the JVM did not know). */
#define AGENT_JAVA_FRAME_TAG (1ull << 63)
#define AGENT_JAVA_FRAME_BCI_SHIFT 47
#define AGENT_JAVA_FRAME_METHOD_MASK ((1ull << 47) - 1)
#define AGENT_JAVA_FRAME_NO_BCI 0xff00u

/* ---- Agent_OnAttach (a load into a running JVM) ---- */

/* The options memtrimd passes: this prefix, then AGENT_PROTOCOL_VERSION. */
#define AGENT_ATTACH_VERSION_OPTION "version="
/* Its return codes; the JVM prints the code in its answer ("return code:
 * <n>") and unloads the library unless it is 0. memtrimd
 * (collectors/jvm/agent_load.cc) tells them apart. */
#define AGENT_ATTACH_OK 0
#define AGENT_ATTACH_RUNNING 3  /* the agent already runs in this process */
#define AGENT_ATTACH_VERSION 4  /* memtrimd expects another agent version */
#define AGENT_ATTACH_DISABLED 5 /* MEMTRIMD_AGENT_DISABLE=1 in the environment */
#define AGENT_ATTACH_FAILED 6   /* it could not start (its reason on stderr) */

#endif
