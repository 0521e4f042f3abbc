// memtrimd-daemon: the full program behind the `memtrimd` launcher: the
// daemon (default) and the one-shot `inspect`, `jcmd` and `trim` commands.
// Exit codes: 0 ok, 1 fatal runtime error, 2 bad usage or configuration.

#include <malloc.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "collectors/agent/client/sampler_record.h"
#include "collectors/jvm/agent_load.h"
#include "collectors/jvm/agent_load_record.h"
#include "collectors/jvm/signal_record.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/symbols/target_elf.h"
#include "daemon/base/log.h"
#include "daemon/base/shutdown.h"
#include "daemon/base/units.h"
#include "daemon/cli/cli_errors.h"
#include "daemon/cli/flags.h"
#include "daemon/cli/jcmd_command.h"
#include "daemon/report/history.h"
#include "daemon/report/inspect.h"
#include "daemon/report/section_trims.h"
#include "daemon/sampling/collector_registry.h"
#include "daemon/sampling/collector_set.h"
#include "daemon/sampling/process_look.h"
#include "daemon/sampling/scheduler.h"
#include "daemon/sampling/target_read.h"
#include "daemon/sampling/target_search.h"
#include "daemon/sampling/target_selector.h"
#include "daemon/trim/trim.h"
#include "daemon/trim/trim_engine.h"
#include "daemon/web/http_server.h"
#include "daemon/web/listener_wake.h"
#include "daemon/web/web_config_file.h"

namespace memtrimd {
namespace {

TargetRule RuleFrom(const DaemonConfig& c) {
  TargetRule r;
  if (c.target_pid) {
    r.mode = TargetRule::Mode::kPid;
    r.pid = *c.target_pid;
  } else if (!c.target_pidfile.empty()) {
    r.mode = TargetRule::Mode::kPidfile;
    r.pidfile = c.target_pidfile;
  } else if (!c.target_match.empty()) {
    r.mode = TargetRule::Mode::kMatch;
    r.match = c.target_match;
  }
  return r;
}

// The run's one cache of ELF function tables, for every target's sites
// (--collector.sites): a library all JVMs map is read once, and its cap is
// the one figure to charge it with.
std::shared_ptr<symbols::SymbolCache> MakeSymbolCache(uint64_t sites_budget) {
  return std::make_shared<symbols::SymbolCache>(
      std::min<std::size_t>(symbols::kSymbolCacheBytes, sites_budget / 2));
}

int RunInspectCommand(const InspectConfig& c) {
  Result<Target> target = procfs::ReadTarget("/proc", c.pid);
  if (!target.ok()) return UsageFail(PidProblem(c.pid, target.status()));
  CollectorOptions options = c.collector;
  options.sites_turn_on = false;
  options.symbol_cache = MakeSymbolCache(options.sites_memory_budget);
  std::vector<CollectorSlot> slots = BuildCollectors(options, {{"sites", c.sites}});
  TargetSnapshot ts;
  ts.target = *target;
  ts.start_time_seconds = ProcessStartTimeSeconds(target->start_ticks);
  SampleTarget(slots, true, nullptr, ts);
  std::string out = c.json ? RenderInspectJson(ts) : RenderInspectTable(ts);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

TrimBackendKind BackendKind(const std::string& name) {
  if (name == "jvm") return TrimBackendKind::kJvm;
  if (name == "agent") return TrimBackendKind::kAgent;
  return TrimBackendKind::kAuto;
}

int RunTrimCommand(const TrimCommandConfig& c) {
  Result<Target> target = procfs::ReadTarget("/proc", c.pid);
  if (!target.ok()) return UsageFail(PidProblem(c.pid, target.status()));
  TrimOptions o;
  o.backend = BackendKind(c.backend);
  o.timeout = c.timeout;
  o.glibc_heap_size = c.glibc_heap_size;
  Result<TrimResult> r = TrimNow(*target, o);
  if (!r.ok()) {
    std::fprintf(stderr, "memtrimd: pid %d: cannot trim: %s\n", c.pid,
                 r.status().message().c_str());
    return kExitFatal;
  }
  r->trigger = "manual";
  std::string out = c.json ? RenderTrimJson(*r) : RenderTrimText(*r);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return r->success ? 0 : kExitFatal;
}

int RunDaemonCommand(const DaemonConfig& c) {
  log::Init(c.log_level, c.log_format);
  if (c.target_pid) {
    Result<Target> t = procfs::ReadTarget("/proc", *c.target_pid);
    if (!t.ok()) return UsageFail("--target.pid: " + PidProblem(*c.target_pid, t.status()));
  }

  // Signals go to the main thread's sigwait only: block them before any
  // thread starts so every thread inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // A client that hangs up mid-response must not kill the daemon.
  signal(SIGPIPE, SIG_IGN);

  // What memtrimd remembers per JVM instance, one record each for the whole
  // daemon: every attach (the collectors' and the trims') consults the same
  // signal record, every target's collectors the same agent loads.
  auto signal_record = std::make_shared<jvm::SignalRecord>();
  auto agent_loads = std::make_shared<jvm::AgentLoadRecord>();

  SnapshotStore store;
  // The incident page's charts: a point per published sample, nothing more.
  SampleHistory history(c.web_history);
  store.SetOnPublish([&history](const Snapshot& s) { history.Record(s); });
  TrimEngineOptions trim;
  trim.policy.interval = c.trim.interval;
  trim.policy.max_interval = c.trim.max_interval;
  trim.policy.jitter = c.trim.jitter;
  if (c.trim.min_limit_ratio > 0) trim.policy.min_limit_ratio = c.trim.min_limit_ratio;
  trim.policy.floor_bytes = c.trim.floor_bytes;
  trim.policy.unproductive_runs = c.trim.unproductive_runs;
  trim.policy.reset_growth_bytes = c.trim.reset_growth_bytes;
  trim.policy.force_when_jvm_trims = c.trim.force;
  trim.trim.backend = BackendKind(c.trim.backend);
  trim.trim.timeout = c.trim.timeout;
  trim.trim.glibc_heap_size = c.collector.glibc_heap_size;
  trim.trim.signal_record = signal_record;
  trim.only_opted_in = c.trim.only_opted_in.value_or(c.node_mode);
  trim.max_per_minute = c.trim.max_per_minute;
  TrimEngine trims(trim, store);

  std::unique_ptr<WebConfigFile> web;
  if (!c.web_config_file.empty()) {
    auto opened = WebConfigFile::Open(c.web_config_file);
    if (!opened.ok()) return UsageFail("--web.config.file: " + opened.status().message());
    web = std::move(opened).value();
  }
  if (c.enable_trim_api && !(web && web->Current()->config.authenticates())) {
    return UsageFail(
        "--web.enable-trim-api needs authentication: set basic_auth_users, or tls_server_config "
        "with client_auth_type: RequireAndVerifyClientCert, in --web.config.file");
  }

  HttpOptions http;
  http.web = web.get();
  http.listen_addresses = c.listen_addresses;
  http.telemetry_path = c.telemetry_path;
  http.max_connections = c.max_connections;
  http.max_sample_age = std::max<std::chrono::milliseconds>(5 * c.sample_interval, 30s);
  http.enable_trim_api = c.enable_trim_api;
  http.metric_detail = c.metric_detail;
  http.metric_detail.sites_top = c.collector.sites_top;
  http.history = &history;
  http.page_refresh = c.sample_interval;
  HttpServer server(http, store, &trims);
  Status listening = server.Start();
  if (!listening.ok()) return UsageFail(listening.message());
  store.SetAfterPublish([&server] { server.PrepareMetrics(); });

  // One line per JVM, when memtrimd's load of its agent into it is decided
  // (--jvm.load-agent); later samples only read the recorded outcome.
  agent_loads->SetListener([](const Target& t, const jvm::AgentLoadOutcome& o) {
    const std::string result = jvm::AgentLoadResultName(o.result);
    auto fields = {log::Field{"pid", std::to_string(t.pid)}, log::Field{"comm", t.comm},
                   log::Field{"result", result}, log::Field{"reason", o.text}};
    if (o.Loaded()) {
      log::Info("agent loaded into the JVM", fields);
    } else if (o.result == jvm::AgentLoadResult::kRefused ||
               o.result == jvm::AgentLoadResult::kFailed) {
      log::Warn("agent not loaded into the JVM", fields);
    } else {
      log::Info("agent not loaded into the JVM", fields);
    }
  });
  SchedulerOptions sampling;
  sampling.interval = c.sample_interval;
  sampling.collector = c.collector;
  sampling.collector.signal_record = signal_record;
  sampling.collector.agent_loads = agent_loads;
  sampling.collector.symbol_cache = MakeSymbolCache(c.collector.sites_memory_budget);
  // One account for every target's sites, the cache's cap charged whole.
  if (CollectorEnabled(c.collectors, *FindCollector("sites"))) {
    sampling.collector.sites_budget = std::make_shared<agent::SitesBudget>(
        c.collector.sites_memory_budget, sampling.collector.symbol_cache->max_bytes());
  }
  // The samplers this memtrimd turns on, turned off at a clean stop; without
  // --collector.sites, a sampler found on is turned off at once.
  auto samplers = std::make_shared<agent::SamplerRecord>();
  sampling.collector.sampler_record = samplers;
  if (const CollectorDecl* sites = FindCollector("sites")) {
    sampling.collector.sites_stop_others = !CollectorEnabled(c.collectors, *sites);
  }
  sampling.switches = c.collectors;
  if (c.node_mode) sampling.node = c.node;
  sampling.discovery_interval = c.discovery_interval;
  Scheduler scheduler(sampling, TargetSelector(RuleFrom(c)), store);
  trims.SetAfterTrim([&scheduler, &history](const Target& t, const TrimResult& r,
                                            std::chrono::system_clock::time_point ended) {
    history.RecordTrim(t, r);
    scheduler.AfterTrim(t, ended);
  });

  // Before the "started" line that announces the ports: the first sample
  // (which waits for no socket collector) is published by then, so /healthz
  // answers 200 from the first request.
  scheduler.Start();
  std::string ports;
  for (int p : server.BoundPorts()) ports += (ports.empty() ? "" : ",") + std::to_string(p);
  log::Info("memtrimd started", {{"listen", CivetwebPorts(c.listen_addresses)},
                                 {"tls", web && web->Current()->tls ? "on" : "off"},
                                 {"ports", ports},
                                 {"telemetry_path", c.telemetry_path},
                                 {"sample_interval", FormatDuration(c.sample_interval)},
                                 {"smaps_interval", FormatDuration(c.collector.smaps_interval)},
                                 {"trim_interval", FormatDuration(c.trim.interval)},
                                 {"trim_backend", c.trim.backend},
                                 {"targets", c.node_mode ? "node" : "one"}});
  trims.Start();

  int sig = 0;
  sigwait(&stop_signals, &sig);
  log::Info("stopping", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  // First, so that nothing below waits for a call blocked on a stopped
  // target: a trim (scheduled, or an API request civetweb's mg_stop would
  // wait for), or an attach or agent query.
  RequestShutdown();
  StopWithPokes(server.BoundPorts(), [&] { server.Stop(); });
  trims.Stop();
  scheduler.Stop();
  // Every sampler this memtrimd turned on, off (nobody reads it once memtrimd
  // is gone), in parallel and within a few seconds in all: a stopped target
  // cannot hold the stop; it samples on until its lease ends.
  if (samplers->Size() > 0) {
    agent::SamplerRecord::Stopped off = samplers->TurnAllOff(std::chrono::seconds(3));
    log::Info("allocation sampling turned off",
              {{"targets", std::to_string(off.off)}, {"missed", std::to_string(off.missed)}});
  }
  // A target read, a process look or a sidecar's search for its target
  // still running (TargetRead, ProcessLook, TargetSearch) may never end: one blocked on a FUSE
  // server that took its request waits for that server.
  if (std::size_t left = AbandonedCalls() + TargetRead::Running() + ProcessLook::Running() +
                         TargetSearch::Running();
      left > 0) {
    // Those calls end at their deadlines on threads of their own. Exit now,
    // without running static destructors under them; the log is flushed
    // line by line and memtrimd writes nothing else.
    log::Info("stopped", {{"abandoned_calls", std::to_string(left)}});
    std::fflush(nullptr);
    std::_Exit(0);
  }
  return 0;
}

}  // namespace
}  // namespace memtrimd

int main(int argc, char** argv) {
  using namespace memtrimd;
  // memtrimd's own threads would each get a glibc arena; two are plenty for
  // a daemon this size and keep its RSS small.
  mallopt(M_ARENA_MAX, 2);
  // Fixed thresholds. Left dynamic, glibc raises its mmap threshold to the
  // largest block freed so far (a JVM's smaps, a refused 4 MiB attach
  // answer) and its trim threshold to twice that, and then keeps up to that
  // much free at the top of a non-main arena, where the malloc_trim(0) after
  // each sample never reaches: memtrimd's RSS stepped up by 8 MiB and stayed.
  // Fixed, a block over 256 KiB is a mapping of its own, unmapped when freed.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  mallopt(M_TRIM_THRESHOLD, 512 * 1024);
  Command cmd = ParseCommandLine(argc, argv);
  if (auto* p = std::get_if<PrintAndExit>(&cmd)) {
    std::fputs(p->text.c_str(), stdout);
    return 0;
  }
  if (auto* u = std::get_if<UsageError>(&cmd)) return UsageFail(u->message);
  if (auto* i = std::get_if<RunInspect>(&cmd)) return RunInspectCommand(i->config);
  if (auto* j = std::get_if<RunJcmd>(&cmd)) return RunJcmdCommand(j->config);
  if (auto* t = std::get_if<RunTrim>(&cmd)) return RunTrimCommand(t->config);
  return RunDaemonCommand(std::get<RunDaemon>(cmd).config);
}
