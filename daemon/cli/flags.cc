#include "daemon/cli/flags.h"

#include <map>
#include <regex>
#include <sstream>
#include <tuple>

#include <CLI/CLI.hpp>

#include "collectors/common/text.h"
#include "daemon/base/units.h"
#include "daemon/build_info.h"

namespace memtrimd {
namespace {

std::string FormatCount(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

// The defaults the flags show and start from are those of the config
// structs, so each is written once.
const DaemonConfig& Defaults() {
  static const DaemonConfig defaults;
  return defaults;
}

// Flag values as typed; validated into DaemonConfig / InspectConfig after
// parsing so every problem gets one clear line.
struct RawFlags {
  std::vector<std::string> listen{Defaults().listen_addresses};
  std::string telemetry_path = Defaults().telemetry_path;
  std::string max_connections = FormatCount(Defaults().max_connections);
  std::string web_config_file;
  std::string web_history = FormatDuration(Defaults().web_history);
  std::string sample_interval = FormatDuration(Defaults().sample_interval);
  std::string smaps_interval = FormatDuration(Defaults().collector.smaps_interval);
  std::string target_pid;
  std::string target_pidfile;
  std::string target_match;
  std::string target_memory_limit;
  std::string targets = "one";
  std::string targets_max = FormatCount(static_cast<double>(Defaults().node.max_targets));
  std::string targets_min_rss = FormatByteSize(Defaults().node.min_rss_bytes);
  std::string targets_match;
  std::string targets_exclude;
  std::string discovery_interval = FormatDuration(Defaults().discovery_interval);
  std::string metrics_detail;  // "" = the mode's default
  std::string trim_targets;    // "" = the mode's default
  std::string trim_max_per_minute = FormatCount(Defaults().trim.max_per_minute);
  // --collector.<name>, one per registry entry (collector_registry.h).
  std::map<std::string, bool> collector_on;
  std::string jvm_interval = FormatDuration(Defaults().collector.jvm_interval);
  std::string jvm_command_timeout = FormatDuration(Defaults().collector.jvm_command_timeout);
  bool jvm_load_agent = Defaults().collector.jvm_load_agent;
  std::string jvm_agent_path = Defaults().collector.jvm_agent_path;
  std::string glibc_heap_size = FormatByteSize(Defaults().collector.glibc_heap_size);
  bool glibc_confirm_heaps = Defaults().collector.glibc_confirm_heaps;
  std::string sites_interval = FormatDuration(Defaults().collector.sites_interval);
  std::string sites_period = FormatByteSize(Defaults().collector.sites_period);
  std::string sites_max_stacks =
      FormatCount(static_cast<double>(Defaults().collector.sites_max_stacks));
  std::string sites_top = FormatCount(static_cast<double>(Defaults().collector.sites_top));
  std::string sites_memory_budget = FormatByteSize(Defaults().collector.sites_memory_budget);
  std::string sites_max_rate = std::to_string(Defaults().collector.sites_max_rate);
  bool sites_java_frames = Defaults().collector.sites_java_frames;
  std::string log_level = Defaults().log_level;
  std::string log_format = "logfmt";

  std::string inspect_pid;
  bool inspect_json = false;
  bool inspect_sites = false;

  std::string jcmd_pid;
  std::string jcmd_timeout = FormatDuration(JcmdConfig{}.timeout);

  std::string trim_interval = FormatDuration(Defaults().trim.interval);
  std::string trim_backend = Defaults().trim.backend;
  std::string trim_min_limit_ratio = FormatCount(Defaults().trim.min_limit_ratio);
  std::string trim_floor = FormatByteSize(Defaults().trim.floor_bytes);
  std::string trim_unproductive_runs = FormatCount(Defaults().trim.unproductive_runs);
  std::string trim_max_interval = FormatDuration(Defaults().trim.max_interval);
  std::string trim_reset_growth = FormatByteSize(Defaults().trim.reset_growth_bytes);
  std::string trim_timeout = FormatDuration(Defaults().trim.timeout);
  std::string trim_jitter = FormatCount(Defaults().trim.jitter);
  bool trim_force = Defaults().trim.force;
  bool enable_trim_api = Defaults().enable_trim_api;

  std::string trim_cmd_pid;
  bool trim_cmd_json = false;
};

struct Parser {
  CLI::App app{
      "memtrimd watches a process's native memory (RSS by kind, glibc arena heaps, its "
      "container limit) from outside and serves it as Prometheus metrics.",
      "memtrimd"};
  CLI::App* inspect = nullptr;
  CLI::App* jcmd = nullptr;
  CLI::App* trim = nullptr;
  RawFlags raw;
};

CLI::Option* WithEnv(CLI::Option* opt, const std::string& flag) {
  return opt->envname(EnvNameFor(flag));
}

void AddOption(CLI::App& app, const std::string& flag, std::string& target, const std::string& help,
               bool env = true) {
  CLI::Option* o = app.add_option(flag, target, help)->capture_default_str()->type_name("");
  if (env) WithEnv(o, flag);
}

void AddCollectorSwitch(CLI::App& app, const std::string& name, bool& target,
                        const std::string& help) {
  // A switch that is off by default is turned on by --collector.<name>.
  std::string flag = "--collector." + name;
  CLI::Option* o = app.add_flag(flag + ",!--no-collector." + name, target,
                                help + " (--no-collector." + name + " turns it off)");
  o->default_str(target ? "true" : "false");
  WithEnv(o, flag);
}

std::unique_ptr<Parser> BuildParser() {
  auto p = std::make_unique<Parser>();
  CLI::App& app = p->app;
  RawFlags& r = p->raw;
  app.set_version_flag("--version",
                       std::string("memtrimd ") + kVersion + " (revision " + kRevision + ")");
  app.option_defaults()->always_capture_default();

  app.add_option("--web.listen-address", r.listen,
                 "Address to serve metrics on, host:port or :port (repeatable; the environment "
                 "variable takes a comma-separated list)")
      ->capture_default_str()
      ->type_name("")
      ->delimiter(',')
      ->envname(EnvNameFor("--web.listen-address"));
  AddOption(app, "--web.telemetry-path", r.telemetry_path, "Path under which to expose metrics");
  AddOption(app, "--web.max-connections", r.max_connections,
            "Connections served at once, each by its own thread; a connection holds its thread "
            "while its client sends headers (up to 3s) and between keep-alive requests (up to "
            "0.5s)");
  AddOption(app, "--web.config.file", r.web_config_file,
            "Web configuration in the exporter-toolkit format (TLS, client certificates, basic "
            "auth, headers); re-read when it or a file it names changes");
  AddOption(app, "--web.history", r.web_history,
            "How far back the charts of the incident page (/) go: one point per sample and "
            "target is kept in memory for this long (32 bytes each, at most 720 a target; "
            "beyond that older points are thinned)");
  AddOption(app, "--sample.interval", r.sample_interval,
            "How often to sample the target (status, cgroup); also how fast a restarted target "
            "is noticed");
  AddOption(app, "--smaps.interval", r.smaps_interval,
            "How often to read /proc/<pid>/smaps for arena heaps; each read briefly holds the "
            "target's mmap lock, so keep this longer than the sample interval");
  AddOption(app, "--target.pid", r.target_pid, "Watch this pid (fixed: not re-picked if it exits)");
  AddOption(app, "--target.pidfile", r.target_pidfile,
            "Watch the pid written in this file (re-read when the target is gone)");
  AddOption(app, "--target.match", r.target_match,
            "Watch the largest process whose command line (arguments joined by spaces) matches "
            "this regular expression");
  AddOption(
      app, "--targets", r.targets,
      "one: watch one process, chosen by --target.* (the sidecar); node: every JVM, and "
      "every glibc or musl program above --targets.min-rss, in memtrimd's PID namespace (a node "
      "agent with hostPID)");
  AddOption(app, "--targets.max", r.targets_max,
            "Node mode: watch at most this many processes, JVMs and programs with "
            "MEMTRIMD_TRIM=1 first, then by anonymous RSS plus swap, largest first; the rest are "
            "counted in memtrimd_targets_skipped");
  AddOption(app, "--targets.min-rss", r.targets_min_rss,
            "Node mode: smallest anonymous RSS plus swap (memory it holds alone, not shared "
            "file pages) of a glibc or musl program worth watching (JVMs are always watched)");
  AddOption(app, "--targets.match", r.targets_match,
            "Node mode: watch only processes whose command line or comm matches this regular "
            "expression");
  AddOption(app, "--targets.exclude", r.targets_exclude,
            "Node mode: never watch processes whose command line or comm matches this regular "
            "expression (a process can also opt out with MEMTRIMD_WATCH=0 in its environment)");
  AddOption(app, "--discovery.interval", r.discovery_interval,
            "Node mode: how often to look for new processes (exited ones are dropped every "
            "sample)");
  std::string families;
  for (std::string_view f : kDetailFamilies)
    families += (families.empty() ? "" : ", ") + std::string(f);
  AddOption(app, "--metrics.detail", r.metrics_detail,
            "Detail families /metrics carries: all, none, or a list of " + families +
                " (default: all with --targets=one, none with --targets=node; docs/metrics.md, "
                "\"Series budget\")");
  AddOption(app, "--target.memory-limit", r.target_memory_limit,
            "Memory limit to report when the target's cgroup cannot be read (bytes or 512Mi, "
            "2Gi; e.g. from the Downward API)");
  for (const CollectorDecl& d : CollectorRegistry()) {
    bool& on = r.collector_on[d.name];
    on = d.default_on;
    AddCollectorSwitch(app, d.name, on, d.help);
  }
  AddOption(app, "--jvm.interval", r.jvm_interval,
            "How often to run diagnostic commands in a JVM target (each is a short pause for the "
            "JVM's attach listener thread)");
  AddOption(app, "--jvm.command-timeout", r.jvm_command_timeout,
            "Deadline for one diagnostic command (connect, send, answer)");
  app.add_flag("--jvm.load-agent", r.jvm_load_agent,
               "Load libmemtrimd_agent.so into each watched JVM that lacks it, through its "
               "attach socket (once per JVM; MEMTRIMD_AGENT_LOAD=0 in a JVM's environment opts "
               "it out)")
      ->default_str("false")
      ->envname(EnvNameFor("--jvm.load-agent"));
  AddOption(app, "--jvm.agent-path", r.jvm_agent_path,
            "With --jvm.load-agent: the agent's path as the JVM sees it (e.g. a shared volume); "
            "empty: memtrimd copies its own into the JVM's /tmp for the load");
  AddOption(app, "--sites.interval", r.sites_interval,
            "With --collector.sites: how often to read each target's sampled allocation sites "
            "(one answer of at most a few MiB from its agent, named outside the target)");
  AddOption(app, "--sites.period", r.sites_period,
            "With --collector.sites: mean bytes allocated between two sampled allocations "
            "(4KiB to 1GiB; smaller is more exact and costs the target more)");
  AddOption(app, "--sites.max-rate", r.sites_max_rate,
            "With --collector.sites: sampled allocations a second each target may take at most "
            "(0 to 1000000; 0: no bound); past it the agent raises the period, which bounds "
            "the cost in every program and makes estimates rougher in those that hit it");
  app.add_flag("--sites.java-frames,!--no-sites.java-frames", r.sites_java_frames,
               "With --collector.sites: in a JVM, walk the Java frames above each sampled "
               "allocation and name sites by the application's method "
               "(--no-sites.java-frames: native frames only)")
      ->default_str("true")
      ->envname(EnvNameFor("--sites.java-frames"));
  AddOption(app, "--sites.max-stacks", r.sites_max_stacks,
            "With --collector.sites: stacks kept per target, largest first (1 to 4096); the "
            "rest are summed into one row of the profile");
  AddOption(app, "--sites.top", r.sites_top,
            "With --collector.sites: sites per target in memtrimd_native_site_* (0 to 50), plus "
            "one row named other for the rest");
  AddOption(app, "--sites.memory-budget", r.sites_memory_budget,
            "With --collector.sites: memory for every target's sites together (kept stacks, "
            "their names, site history, and the symbol cache, which gets at most half); a "
            "target's profile holds at most an eighth of what the cache leaves. Past it, "
            "stacks or whole targets' sites are not kept, counted in "
            "memtrimd_sites_dropped_total (4MiB to 4GiB)");
  AddOption(app, "--glibc.heap-size", r.glibc_heap_size,
            "Size of one glibc arena heap (64MiB on 64-bit; 8MiB with "
            "glibc.malloc.hugetlb=2 on glibc 2.35-2.41)");
  app.add_flag("--glibc.confirm-heaps,!--no-glibc.confirm-heaps", r.glibc_confirm_heaps,
               "Confirm each arena heap by reading its 40-byte header with process_vm_readv "
               "(needs ptrace-read access; shape alone is used otherwise)")
      ->default_str("true")
      ->envname(EnvNameFor("--glibc.confirm-heaps"));
  AddOption(app, "--trim.interval", r.trim_interval,
            "How often to make the target give free heap pages back (malloc_trim); 0 turns "
            "scheduled trims off");
  AddOption(app, "--trim.backend", r.trim_backend,
            "auto (a JVM through its attach socket, other programs through the preloaded "
            "agent), jvm or agent");
  AddOption(app, "--trim.min-limit-ratio", r.trim_min_limit_ratio,
            "Trim only while RSS / memory limit is at least this (0 to 1; 0: always)");
  AddOption(app, "--trim.floor", r.trim_floor, "A trim that gives back less than this did not pay");
  AddOption(app, "--trim.unproductive-runs", r.trim_unproductive_runs,
            "After this many trims in a row that did not pay, double the interval");
  AddOption(app, "--trim.max-interval", r.trim_max_interval,
            "Longest interval the backoff reaches");
  AddOption(app, "--trim.reset-growth", r.trim_reset_growth,
            "Arena heap RSS growth since the last trim that brings the base interval back");
  AddOption(app, "--trim.timeout", r.trim_timeout, "Deadline for one trim");
  AddOption(app, "--trim.jitter", r.trim_jitter,
            "Random spread of each interval (0 to 1: 0.1 is +-10%), so replicas do not trim "
            "in lockstep");
  AddOption(app, "--trim.targets", r.trim_targets,
            "all: trim every target but those with MEMTRIMD_TRIM=0 in their environment; "
            "opted-in: only those with MEMTRIMD_TRIM=1 (default: all with --targets=one, "
            "opted-in with --targets=node)");
  AddOption(app, "--trim.max-per-minute", r.trim_max_per_minute,
            "Scheduled trims started in any minute, across all targets (0: no cap); a due trim "
            "beyond it waits its turn");
  app.add_flag("--trim.force", r.trim_force,
               "Trim a JVM even when it trims itself (-XX:TrimNativeHeapInterval)")
      ->default_str("false")
      ->envname(EnvNameFor("--trim.force"));
  app.add_flag("--web.enable-trim-api", r.enable_trim_api,
               "Serve POST /api/v1/trim (needs basic_auth_users or verified client certificates "
               "in --web.config.file)")
      ->default_str("false")
      ->envname(EnvNameFor("--web.enable-trim-api"));
  AddOption(app, "--log.level", r.log_level, "Log level: debug, info, warn, error");
  AddOption(app, "--log.format", r.log_format, "Log format: logfmt or json");

  p->inspect = app.add_subcommand(
      "inspect", "Print what memtrimd sees in a process now (one full sample), then exit");
  p->inspect->add_option("--pid", r.inspect_pid, "Process to inspect")->required()->type_name("");
  p->inspect->add_flag("--json", r.inspect_json, "Print JSON instead of a table");
  p->inspect->add_flag("--sites", r.inspect_sites,
                       "Also print the allocation sites the agent has sampled since a memtrimd "
                       "with --collector.sites turned its sampler on (inspect never turns it on)");
  AddOption(*p->inspect, "--glibc.heap-size", r.glibc_heap_size, "Size of one glibc arena heap",
            false);
  AddOption(*p->inspect, "--target.memory-limit", r.target_memory_limit,
            "Memory limit to report when the cgroup cannot be read", false);
  p->jcmd = app.add_subcommand(
      "jcmd",
      "Run one diagnostic command in a JVM through its attach socket and print the answer (what "
      "jcmd does, without a JVM): memtrimd jcmd --pid N VM.native_memory summary");
  p->jcmd->add_option("--pid", r.jcmd_pid, "JVM process")->required()->type_name("");
  p->jcmd->add_option("--timeout", r.jcmd_timeout, "Deadline for the command's answer")
      ->capture_default_str()
      ->type_name("");
  // Everything after the command name is the command's own (e.g. "-all").
  p->jcmd->prefix_command();

  p->trim = app.add_subcommand(
      "trim",
      "Make a process give free heap pages back now (one malloc_trim), and print what "
      "it gave back");
  p->trim->add_option("--pid", r.trim_cmd_pid, "Process to trim")->required()->type_name("");
  p->trim->add_flag("--json", r.trim_cmd_json, "Print JSON instead of text");
  AddOption(*p->trim, "--backend", r.trim_backend, "auto, jvm or agent", false);
  AddOption(*p->trim, "--timeout", r.trim_timeout, "Deadline for the trim", false);
  app.require_subcommand(0, 1);
  return p;
}

std::string Quote(const std::string& s) { return "\"" + s + "\""; }

// Validates everything the daemon and inspect share; "" when fine.
std::string CheckCommon(const RawFlags& r, uint64_t& heap_size, std::optional<uint64_t>& limit) {
  auto hs = ParseByteSize(r.glibc_heap_size);
  if (!hs || *hs < 4096 || (*hs & (*hs - 1)) != 0) {
    return "--glibc.heap-size: " + Quote(r.glibc_heap_size) +
           " is not a power-of-two size of at least 4KiB (e.g. 64MiB)";
  }
  heap_size = *hs;
  if (!r.target_memory_limit.empty()) {
    auto l = ParseByteSize(r.target_memory_limit);
    if (!l || *l == 0) {
      return "--target.memory-limit: " + Quote(r.target_memory_limit) +
             " is not a size (bytes, or e.g. 512Mi, 2Gi)";
    }
    limit = *l;
  }
  return "";
}

std::optional<double> ParseRatio(const std::string& s) {
  if (s.empty() || s.size() > 16) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !(v >= 0 && v <= 1)) return std::nullopt;
  return v;
}

std::string CheckTrim(const RawFlags& r, TrimConfig& t) {
  auto interval = ParseDuration(r.trim_interval);
  if (!interval) {
    return "--trim.interval: " + Quote(r.trim_interval) + " is not a duration (0 turns it off)";
  }
  t.interval = *interval;
  if (r.trim_backend != "auto" && r.trim_backend != "jvm" && r.trim_backend != "agent") {
    return "--trim.backend: " + Quote(r.trim_backend) + " is not auto, jvm or agent";
  }
  t.backend = r.trim_backend;
  auto ratio = ParseRatio(r.trim_min_limit_ratio);
  if (!ratio) return "--trim.min-limit-ratio: " + Quote(r.trim_min_limit_ratio) + " is not 0 to 1";
  t.min_limit_ratio = *ratio;
  auto floor = ParseByteSize(r.trim_floor);
  if (!floor) return "--trim.floor: " + Quote(r.trim_floor) + " is not a size";
  t.floor_bytes = *floor;
  auto runs = ParsePid(r.trim_unproductive_runs);
  if (!runs || *runs > 1000) {
    return "--trim.unproductive-runs: " + Quote(r.trim_unproductive_runs) + " is not 1 to 1000";
  }
  t.unproductive_runs = *runs;
  auto max = ParseDuration(r.trim_max_interval);
  if (!max || *max < t.interval) {
    return "--trim.max-interval: " + Quote(r.trim_max_interval) +
           " is not a duration at least as long as --trim.interval";
  }
  t.max_interval = *max;
  auto growth = ParseByteSize(r.trim_reset_growth);
  if (!growth) return "--trim.reset-growth: " + Quote(r.trim_reset_growth) + " is not a size";
  t.reset_growth_bytes = *growth;
  auto timeout = ParseDuration(r.trim_timeout);
  if (!timeout || timeout->count() == 0) {
    return "--trim.timeout: " + Quote(r.trim_timeout) + " is not a positive duration";
  }
  t.timeout = *timeout;
  auto jitter = ParseRatio(r.trim_jitter);
  if (!jitter) return "--trim.jitter: " + Quote(r.trim_jitter) + " is not 0 to 1";
  t.jitter = *jitter;
  t.force = r.trim_force;
  return "";
}

Command Validate(const Parser& p) {
  const RawFlags& r = p.raw;
  if (p.inspect->parsed()) {
    InspectConfig c;
    auto pid = ParsePid(r.inspect_pid);
    if (!pid) return UsageError{"--pid: " + Quote(r.inspect_pid) + " is not a process id"};
    c.pid = *pid;
    c.json = r.inspect_json;
    c.sites = r.inspect_sites;
    std::string err =
        CheckCommon(r, c.collector.glibc_heap_size, c.collector.memory_limit_fallback);
    if (!err.empty()) return UsageError{err};
    return RunInspect{c};
  }
  if (p.trim->parsed()) {
    TrimCommandConfig c;
    auto pid = ParsePid(r.trim_cmd_pid);
    if (!pid) return UsageError{"--pid: " + Quote(r.trim_cmd_pid) + " is not a process id"};
    c.pid = *pid;
    c.json = r.trim_cmd_json;
    if (r.trim_backend != "auto" && r.trim_backend != "jvm" && r.trim_backend != "agent") {
      return UsageError{"--backend: " + Quote(r.trim_backend) + " is not auto, jvm or agent"};
    }
    c.backend = r.trim_backend;
    auto t = ParseDuration(r.trim_timeout);
    if (!t || t->count() == 0) {
      return UsageError{"--timeout: " + Quote(r.trim_timeout) + " is not a positive duration"};
    }
    c.timeout = *t;
    return RunTrim{c};
  }
  if (p.jcmd->parsed()) {
    JcmdConfig c;
    auto pid = ParsePid(r.jcmd_pid);
    if (!pid) return UsageError{"--pid: " + Quote(r.jcmd_pid) + " is not a process id"};
    c.pid = *pid;
    auto t = ParseDuration(r.jcmd_timeout);
    if (!t || t->count() == 0) {
      return UsageError{"--timeout: " + Quote(r.jcmd_timeout) + " is not a positive duration"};
    }
    c.timeout = *t;
    for (const std::string& word : p.jcmd->remaining()) {
      c.command += (c.command.empty() ? "" : " ") + word;
    }
    if (c.command.empty()) {
      return UsageError{"jcmd: no command given (e.g. VM.version, VM.native_memory summary)"};
    }
    return RunJcmd{c};
  }
  DaemonConfig c;
  if (r.listen.empty()) return UsageError{"--web.listen-address: at least one address is needed"};
  for (const std::string& a : r.listen) {
    std::size_t colon = a.rfind(':');
    if (colon == std::string::npos || colon + 1 == a.size()) {
      return UsageError{"--web.listen-address: " + Quote(a) + " is not host:port or :port"};
    }
    // Port 0 asks the kernel for a free port (the log says which one).
    std::string port_text = a.substr(colon + 1);
    auto port = port_text == "0" ? std::optional<pid_t>(0) : ParsePid(port_text);
    if (!port || *port > 65535) {
      return UsageError{"--web.listen-address: " + Quote(a) + " has no valid port"};
    }
  }
  c.listen_addresses = r.listen;
  if (r.telemetry_path.empty() || r.telemetry_path.front() != '/' || r.telemetry_path == "/") {
    return UsageError{"--web.telemetry-path: " + Quote(r.telemetry_path) +
                      " must start with / and not be / itself"};
  }
  c.telemetry_path = r.telemetry_path;
  auto connections = ParsePid(r.max_connections);
  if (!connections || *connections > 1024) {
    return UsageError{"--web.max-connections: " + Quote(r.max_connections) + " is not 1 to 1024"};
  }
  c.max_connections = *connections;
  auto si = ParseDuration(r.sample_interval);
  if (!si || si->count() == 0) {
    return UsageError{"--sample.interval: " + Quote(r.sample_interval) +
                      " is not a positive duration (e.g. 500ms, 15s, 1m)"};
  }
  c.sample_interval = *si;
  auto wh = ParseDuration(r.web_history);
  if (!wh || wh->count() < 1000 || *wh > std::chrono::hours(24)) {
    return UsageError{"--web.history: " + Quote(r.web_history) +
                      " is not a duration from 1s to 24h (e.g. 1h, 30m)"};
  }
  c.web_history = *wh;
  auto mi = ParseDuration(r.smaps_interval);
  if (!mi || mi->count() == 0) {
    return UsageError{"--smaps.interval: " + Quote(r.smaps_interval) +
                      " is not a positive duration (e.g. 30s, 1m, 5m)"};
  }
  c.collector.smaps_interval = *mi;
  auto ji = ParseDuration(r.jvm_interval);
  if (!ji || ji->count() == 0) {
    return UsageError{"--jvm.interval: " + Quote(r.jvm_interval) +
                      " is not a positive duration (e.g. 30s, 1m)"};
  }
  c.collector.jvm_interval = *ji;
  auto jt = ParseDuration(r.jvm_command_timeout);
  if (!jt || jt->count() == 0) {
    return UsageError{"--jvm.command-timeout: " + Quote(r.jvm_command_timeout) +
                      " is not a positive duration (e.g. 5s)"};
  }
  c.collector.jvm_command_timeout = *jt;
  if (!r.jvm_agent_path.empty() && r.jvm_agent_path.front() != '/') {
    return UsageError{"--jvm.agent-path: " + Quote(r.jvm_agent_path) + " is not absolute"};
  }
  c.collector.jvm_load_agent = r.jvm_load_agent;
  c.collector.jvm_agent_path = r.jvm_agent_path;
  auto sint = ParseDuration(r.sites_interval);
  if (!sint || sint->count() == 0) {
    return UsageError{"--sites.interval: " + Quote(r.sites_interval) +
                      " is not a positive duration (e.g. 30s, 1m)"};
  }
  c.collector.sites_interval = *sint;
  auto period = ParseByteSize(r.sites_period);
  if (!period || *period < 4096 || *period > (1ull << 30)) {
    return UsageError{"--sites.period: " + Quote(r.sites_period) +
                      " is not a size from 4KiB to 1GiB (e.g. 512KiB)"};
  }
  c.collector.sites_period = *period;
  auto max_rate = text::ParseUint(r.sites_max_rate);
  if (!max_rate || *max_rate > 1000000) {
    return UsageError{"--sites.max-rate: " + Quote(r.sites_max_rate) + " is not 0 to 1000000"};
  }
  c.collector.sites_max_rate = *max_rate;
  c.collector.sites_java_frames = r.sites_java_frames;
  auto max_stacks = ParsePid(r.sites_max_stacks);
  if (!max_stacks || *max_stacks > 4096) {
    return UsageError{"--sites.max-stacks: " + Quote(r.sites_max_stacks) + " is not 1 to 4096"};
  }
  c.collector.sites_max_stacks = static_cast<std::size_t>(*max_stacks);
  auto top = r.sites_top == "0" ? std::optional<pid_t>(0) : ParsePid(r.sites_top);
  if (!top || *top > 50) {
    return UsageError{"--sites.top: " + Quote(r.sites_top) + " is not 0 to 50"};
  }
  c.collector.sites_top = static_cast<std::size_t>(*top);
  auto budget = ParseByteSize(r.sites_memory_budget);
  if (!budget || *budget < (4ull << 20) || *budget > (4ull << 30)) {
    return UsageError{"--sites.memory-budget: " + Quote(r.sites_memory_budget) +
                      " is not a size from 4MiB to 4GiB (e.g. 32MiB)"};
  }
  c.collector.sites_memory_budget = *budget;
  if (r.targets != "one" && r.targets != "node") {
    return UsageError{"--targets: " + Quote(r.targets) + " is not one or node"};
  }
  c.node_mode = r.targets == "node";
  auto max_targets = ParsePid(r.targets_max);
  if (!max_targets || *max_targets > 100000) {
    return UsageError{"--targets.max: " + Quote(r.targets_max) + " is not 1 to 100000"};
  }
  c.node.max_targets = static_cast<std::size_t>(*max_targets);
  auto min_rss = ParseByteSize(r.targets_min_rss);
  if (!min_rss)
    return UsageError{"--targets.min-rss: " + Quote(r.targets_min_rss) + " is not a size"};
  c.node.min_rss_bytes = *min_rss;
  for (auto [flag, value, out] :
       {std::tuple{"--targets.match", &r.targets_match, &c.node.match},
        std::tuple{"--targets.exclude", &r.targets_exclude, &c.node.exclude}}) {
    if (value->empty()) continue;
    // std::regex reports a bad pattern by throwing; keep that inside.
    try {
      std::regex re(*value, std::regex::extended);
    } catch (const std::regex_error&) {
      return UsageError{std::string(flag) + ": " + Quote(*value) +
                        " is not a valid POSIX extended regular expression"};
    }
    *out = *value;
  }
  auto di = ParseDuration(r.discovery_interval);
  if (!di || di->count() == 0) {
    return UsageError{"--discovery.interval: " + Quote(r.discovery_interval) +
                      " is not a positive duration (e.g. 30s)"};
  }
  c.discovery_interval = *di;
  std::string detail_err = ParseMetricDetail(
      r.metrics_detail.empty() ? (c.node_mode ? "none" : "all") : r.metrics_detail,
      c.metric_detail);
  if (!detail_err.empty()) return UsageError{"--metrics.detail: " + detail_err};
  if (c.node_mode &&
      (!r.target_pid.empty() || !r.target_pidfile.empty() || !r.target_match.empty())) {
    return UsageError{
        "--targets=node watches every matching process: use --targets.match, not "
        "--target.pid, --target.pidfile or --target.match"};
  }
  if (!c.node_mode && (!r.targets_match.empty() || !r.targets_exclude.empty())) {
    return UsageError{
        "--targets.match and --targets.exclude need --targets=node (the sidecar "
        "takes --target.match)"};
  }
  if (r.trim_targets.empty()) {
    c.trim.only_opted_in = c.node_mode;
  } else if (r.trim_targets == "all" || r.trim_targets == "opted-in") {
    c.trim.only_opted_in = r.trim_targets == "opted-in";
  } else {
    return UsageError{"--trim.targets: " + Quote(r.trim_targets) + " is not all or opted-in"};
  }
  auto per_minute =
      r.trim_max_per_minute == "0" ? std::optional<pid_t>(0) : ParsePid(r.trim_max_per_minute);
  if (!per_minute || *per_minute > 10000) {
    return UsageError{"--trim.max-per-minute: " + Quote(r.trim_max_per_minute) +
                      " is not 0 to 10000"};
  }
  c.trim.max_per_minute = *per_minute;
  int modes = !r.target_pid.empty() + !r.target_pidfile.empty() + !r.target_match.empty();
  if (modes > 1) {
    return UsageError{"--target.pid, --target.pidfile and --target.match exclude each other"};
  }
  if (!r.target_pid.empty()) {
    auto pid = ParsePid(r.target_pid);
    if (!pid) return UsageError{"--target.pid: " + Quote(r.target_pid) + " is not a process id"};
    c.target_pid = *pid;
  }
  c.target_pidfile = r.target_pidfile;
  if (!r.target_match.empty()) {
    // std::regex reports a bad pattern by throwing; keep that inside.
    try {
      std::regex re(r.target_match, std::regex::extended);
    } catch (const std::regex_error& e) {
      return UsageError{"--target.match: " + Quote(r.target_match) +
                        " is not a valid POSIX extended regular expression"};
    }
  }
  c.target_match = r.target_match;
  std::string err = CheckCommon(r, c.collector.glibc_heap_size, c.collector.memory_limit_fallback);
  if (!err.empty()) return UsageError{err};
  std::string trim_err = CheckTrim(r, c.trim);
  if (!trim_err.empty()) return UsageError{trim_err};
  // Whether authentication backs it is checked once the web config is read.
  c.enable_trim_api = r.enable_trim_api;
  c.web_config_file = r.web_config_file;
  c.collectors.insert(r.collector_on.begin(), r.collector_on.end());
  c.collector.glibc_confirm_heaps = r.glibc_confirm_heaps;
  if (r.log_level != "debug" && r.log_level != "info" && r.log_level != "warn" &&
      r.log_level != "error") {
    return UsageError{"--log.level: " + Quote(r.log_level) + " is not debug, info, warn or error"};
  }
  c.log_level = r.log_level;
  if (r.log_format == "logfmt") {
    c.log_format = LogFormat::kLogfmt;
  } else if (r.log_format == "json") {
    c.log_format = LogFormat::kJson;
  } else {
    return UsageError{"--log.format: " + Quote(r.log_format) + " is not logfmt or json"};
  }
  return RunDaemon{c};
}

std::string OneLine(std::string s) {
  for (char& ch : s) {
    if (ch == '\n') ch = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::string EnvNameFor(const std::string& flag) {
  std::string env = "MEMTRIMD_";
  for (char ch : flag.substr(flag.find_first_not_of('-'))) {
    env += (ch == '.' || ch == '-') ? '_' : static_cast<char>(std::toupper(ch));
  }
  return env;
}

Command ParseCommandLine(int argc, const char* const* argv) {
  std::unique_ptr<Parser> p = BuildParser();
  // CLI11 reports through exceptions; they stop here.
  try {
    p->app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::ostringstream out, err;
    p->app.exit(e, out, err);
    return PrintAndExit{out.str()};
  } catch (const CLI::CallForAllHelp& e) {
    std::ostringstream out, err;
    p->app.exit(e, out, err);
    return PrintAndExit{out.str()};
  } catch (const CLI::CallForVersion& e) {
    return PrintAndExit{std::string(e.what()) + "\n"};
  } catch (const CLI::ParseError& e) {
    return UsageError{OneLine(e.what())};
  }
  return Validate(*p);
}

std::vector<FlagDoc> FlagReference() {
  std::unique_ptr<Parser> p = BuildParser();
  std::vector<FlagDoc> out;
  auto add = [&](const CLI::App& app, const std::string& command) {
    for (const CLI::Option* o : app.get_options()) {
      std::string name = o->get_name(false, true);
      if (o->get_lnames().empty()) continue;
      name = "--" + o->get_lnames().front();
      if (name == "--help" || name == "--version") continue;
      out.push_back({command, name, o->get_envname(), o->get_default_str(), o->get_description()});
    }
  };
  add(p->app, "");
  add(*p->inspect, "inspect");
  add(*p->jcmd, "jcmd");
  add(*p->trim, "trim");
  return out;
}

}  // namespace memtrimd
