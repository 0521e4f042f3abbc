// Fuzz target: the command line (ParseCommandLine in daemon/flags), argv
// from the input split at NUL bytes and newlines, after "memtrimd".
//
// Invariants: a usage error is one non-empty line; whatever is accepted
// passed validation: positive intervals and timeouts, a power-of-two glibc
// heap size of at least 4 KiB, at most one target rule, a listen address
// with a port, a telemetry path below "/", ratios within 0..1, a max trim
// interval no shorter than the interval, a known log level and backend,
// pids > 0, and a jcmd command that is not empty.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "daemon/cli/flags.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace memtrimd;

bool PowerOfTwoHeap(uint64_t s) { return s >= 4096 && (s & (s - 1)) == 0; }

bool KnownBackend(const std::string& b) { return b == "auto" || b == "jvm" || b == "agent"; }

void Check(const DaemonConfig& c) {
  FUZZ_CHECK(!c.listen_addresses.empty());
  for (const std::string& a : c.listen_addresses) {
    std::size_t colon = a.rfind(':');
    FUZZ_CHECK(colon != std::string::npos && colon + 1 < a.size());
  }
  FUZZ_CHECK(c.telemetry_path.size() > 1 && c.telemetry_path.front() == '/');
  FUZZ_CHECK(c.sample_interval.count() > 0 && c.collector.smaps_interval.count() > 0);
  FUZZ_CHECK(c.collector.jvm_interval.count() > 0 && c.collector.jvm_command_timeout.count() > 0);
  int modes = c.target_pid.has_value() + !c.target_pidfile.empty() + !c.target_match.empty();
  FUZZ_CHECK(modes <= 1);
  if (c.target_pid) FUZZ_CHECK(*c.target_pid > 0);
  if (c.collector.memory_limit_fallback) FUZZ_CHECK(*c.collector.memory_limit_fallback > 0);
  FUZZ_CHECK(PowerOfTwoHeap(c.collector.glibc_heap_size));
  FUZZ_CHECK(c.log_level == "debug" || c.log_level == "info" || c.log_level == "warn" ||
             c.log_level == "error");
  const TrimConfig& t = c.trim;
  FUZZ_CHECK(t.interval.count() >= 0 && t.max_interval >= t.interval);
  FUZZ_CHECK(KnownBackend(t.backend));
  FUZZ_CHECK(t.min_limit_ratio >= 0 && t.min_limit_ratio <= 1);
  FUZZ_CHECK(t.jitter >= 0 && t.jitter <= 1);
  FUZZ_CHECK(t.unproductive_runs >= 1 && t.unproductive_runs <= 1000);
  FUZZ_CHECK(t.timeout.count() > 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"memtrimd"};
  for (std::string& a : memtrimd::fuzz::SplitArgs(memtrimd::fuzz::AsText(data, size))) {
    args.push_back(std::move(a));
  }
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  Command cmd = ParseCommandLine(static_cast<int>(argv.size()), argv.data());

  if (const UsageError* e = std::get_if<UsageError>(&cmd)) {
    FUZZ_CHECK(!e->message.empty());
    FUZZ_CHECK(e->message.find('\n') == std::string::npos);
  } else if (const PrintAndExit* p = std::get_if<PrintAndExit>(&cmd)) {
    FUZZ_CHECK(!p->text.empty());
  } else if (const RunDaemon* d = std::get_if<RunDaemon>(&cmd)) {
    Check(d->config);
  } else if (const RunInspect* i = std::get_if<RunInspect>(&cmd)) {
    FUZZ_CHECK(i->config.pid > 0);
    FUZZ_CHECK(PowerOfTwoHeap(i->config.collector.glibc_heap_size));
  } else if (const RunJcmd* j = std::get_if<RunJcmd>(&cmd)) {
    FUZZ_CHECK(j->config.pid > 0 && j->config.timeout.count() > 0);
    FUZZ_CHECK(!j->config.command.empty());
  } else if (const RunTrim* t = std::get_if<RunTrim>(&cmd)) {
    FUZZ_CHECK(t->config.pid > 0 && t->config.timeout.count() > 0);
    FUZZ_CHECK(KnownBackend(t->config.backend));
  }
  return 0;
}
