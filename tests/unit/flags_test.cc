#include "daemon/cli/flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace memtrimd {
namespace {

Command Parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"memtrimd"};
  argv.insert(argv.end(), args.begin(), args.end());
  return ParseCommandLine(static_cast<int>(argv.size()), argv.data());
}

std::string UsageMessage(const Command& c) {
  const UsageError* u = std::get_if<UsageError>(&c);
  return u ? u->message : "";
}

TEST(Flags, DefaultsAreTheDocumentedOnes) {
  Command c = Parse({});
  const RunDaemon* d = std::get_if<RunDaemon>(&c);
  ASSERT_NE(d, nullptr) << UsageMessage(c);
  EXPECT_EQ(d->config.listen_addresses, std::vector<std::string>{":8486"});
  EXPECT_EQ(d->config.telemetry_path, "/metrics");
  EXPECT_EQ(d->config.sample_interval, std::chrono::seconds(10));
  EXPECT_EQ(d->config.collector.smaps_interval, std::chrono::seconds(60));
  EXPECT_EQ(d->config.max_connections, 48);
  EXPECT_FALSE(d->config.target_pid.has_value());
  EXPECT_TRUE(d->config.collectors.at("glibc"));
  EXPECT_EQ(d->config.log_format, LogFormat::kLogfmt);
}

TEST(Flags, ParsesEveryDaemonFlag) {
  Command c = Parse({"--web.listen-address=127.0.0.1:9000", "--web.listen-address", "[::1]:9001",
                     "--web.telemetry-path=/m", "--web.max-connections=8", "--web.history=30m",
                     "--sample.interval=250ms", "--smaps.interval=2m", "--target.match=java.*Main",
                     "--target.memory-limit=2Gi", "--no-collector.glibc", "--glibc.heap-size=8MiB",
                     "--log.level=debug", "--log.format=json", "--no-glibc.confirm-heaps"});
  const RunDaemon* d = std::get_if<RunDaemon>(&c);
  ASSERT_NE(d, nullptr) << UsageMessage(c);
  EXPECT_EQ(d->config.listen_addresses, (std::vector<std::string>{"127.0.0.1:9000", "[::1]:9001"}));
  EXPECT_EQ(d->config.web_history, std::chrono::minutes(30));
  EXPECT_EQ(d->config.telemetry_path, "/m");
  EXPECT_EQ(d->config.max_connections, 8);
  EXPECT_EQ(d->config.sample_interval, std::chrono::milliseconds(250));
  EXPECT_EQ(d->config.collector.smaps_interval, std::chrono::minutes(2));
  EXPECT_EQ(d->config.target_match, "java.*Main");
  EXPECT_EQ(d->config.collector.memory_limit_fallback, 2ull << 30);
  EXPECT_FALSE(d->config.collectors.at("glibc"));
  EXPECT_TRUE(d->config.collectors.at("process"));
  EXPECT_EQ(d->config.collector.glibc_heap_size, 8ull << 20);
  EXPECT_FALSE(d->config.collector.glibc_confirm_heaps);
  EXPECT_EQ(d->config.log_level, "debug");
  EXPECT_EQ(d->config.log_format, LogFormat::kJson);
}

TEST(Flags, EnvironmentVariablesSetFlags) {
  setenv("MEMTRIMD_SAMPLE_INTERVAL", "3s", 1);
  setenv("MEMTRIMD_COLLECTOR_CGROUP", "false", 1);
  setenv("MEMTRIMD_WEB_LISTEN_ADDRESS", "127.0.0.1:1,127.0.0.1:2", 1);
  Command c = Parse({});
  unsetenv("MEMTRIMD_SAMPLE_INTERVAL");
  unsetenv("MEMTRIMD_COLLECTOR_CGROUP");
  unsetenv("MEMTRIMD_WEB_LISTEN_ADDRESS");
  const RunDaemon* d = std::get_if<RunDaemon>(&c);
  ASSERT_NE(d, nullptr) << UsageMessage(c);
  EXPECT_EQ(d->config.sample_interval, std::chrono::seconds(3));
  EXPECT_FALSE(d->config.collectors.at("cgroup"));
  EXPECT_EQ(d->config.listen_addresses, (std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"}));
}

TEST(Flags, FlagBeatsEnvironment) {
  setenv("MEMTRIMD_SAMPLE_INTERVAL", "3s", 1);
  Command c = Parse({"--sample.interval=4s"});
  unsetenv("MEMTRIMD_SAMPLE_INTERVAL");
  const RunDaemon* d = std::get_if<RunDaemon>(&c);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->config.sample_interval, std::chrono::seconds(4));
}

struct BadCase {
  std::vector<const char*> args;
  std::string message_part;
};

TEST(Flags, BadInputIsOneLineUsageError) {
  const std::vector<BadCase> cases = {
      {{"--no-such-flag"}, "--no-such-flag"},
      {{"--sample.interval=10x"}, "--sample.interval"},
      {{"--sample.interval=0"}, "positive duration"},
      {{"--smaps.interval=-1s"}, "--smaps.interval"},
      {{"--target.pid=abc"}, "not a process id"},
      {{"--target.pid=0"}, "not a process id"},
      {{"--target.pid=1", "--target.match=x"}, "exclude each other"},
      {{"--target.match=("}, "regular expression"},
      {{"--target.memory-limit=lots"}, "--target.memory-limit"},
      {{"--glibc.heap-size=3MiB"}, "power-of-two"},
      {{"--web.listen-address=localhost"}, "host:port"},
      {{"--web.listen-address=:99999"}, "valid port"},
      {{"--web.telemetry-path=metrics"}, "must start with /"},
      {{"--web.max-connections=0"}, "not 1 to 1024"},
      {{"--web.max-connections=5000"}, "not 1 to 1024"},
      {{"--web.history=0"}, "--web.history: \"0\" is not a duration from 1s to 24h"},
      {{"--web.history=25h"}, "not a duration from 1s to 24h"},
      {{"--log.level=loud"}, "--log.level"},
      {{"--log.format=xml"}, "--log.format"},
      {{"inspect"}, "--pid"},
      {{"inspect", "--pid=-3"}, "--pid"},
  };
  for (const BadCase& bc : cases) {
    std::vector<const char*> argv{"memtrimd"};
    argv.insert(argv.end(), bc.args.begin(), bc.args.end());
    Command c = ParseCommandLine(static_cast<int>(argv.size()), argv.data());
    std::string msg = UsageMessage(c);
    ASSERT_FALSE(msg.empty()) << bc.args.front();
    EXPECT_NE(msg.find(bc.message_part), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
}

TEST(Flags, HelpAndVersionPrintAndExit) {
  Command help = Parse({"--help"});
  const PrintAndExit* h = std::get_if<PrintAndExit>(&help);
  ASSERT_NE(h, nullptr);
  EXPECT_NE(h->text.find("--web.listen-address"), std::string::npos);
  EXPECT_NE(h->text.find("MEMTRIMD_WEB_LISTEN_ADDRESS"), std::string::npos);
  Command version = Parse({"--version"});
  const PrintAndExit* v = std::get_if<PrintAndExit>(&version);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->text.rfind("memtrimd ", 0), 0u);
}

TEST(Flags, InspectTakesPidAndJson) {
  Command c = Parse({"inspect", "--pid", "42", "--json"});
  const RunInspect* i = std::get_if<RunInspect>(&c);
  ASSERT_NE(i, nullptr) << UsageMessage(c);
  EXPECT_EQ(i->config.pid, 42);
  EXPECT_TRUE(i->config.json);
}

TEST(Flags, EveryFlagHasAnEnvironmentVariable) {
  for (const FlagDoc& f : FlagReference()) {
    if (!f.command.empty()) continue;  // subcommand flags are for people at a shell
    EXPECT_EQ(f.env, EnvNameFor(f.name)) << f.name;
  }
  EXPECT_EQ(EnvNameFor("--web.listen-address"), "MEMTRIMD_WEB_LISTEN_ADDRESS");
}

}  // namespace
}  // namespace memtrimd
