// The agent's contract (collectors/agent/agent_protocol.h) against the built
// libmemtrimd_agent.so: the codes Agent_OnAttach really returns and the
// version it really checks are the header's, and a program running the
// agent answers every verb the header lists, each answer read by memtrimd's
// own parser with only the keys the header names for it. A constant changed
// on one side only fails here.

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/agent/agent_protocol.h"
#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/agent_ping.h"
#include "collectors/agent/client/agent_sites.h"
#include "collectors/agent/client/allocator_stats.h"
#include "collectors/agent/client/jvm_buffers.h"
#include "collectors/common/file_reader.h"
#include "collectors/common/text.h"
#include "collectors/jvm/malloc_info.h"
#include "collectors/procfs/maps.h"
#include "collectors/procfs/target_reader.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

using OnAttachFn = int (*)(void*, char*, void*);

// In a forked child: loads the real library with the agent switched off
// (so its constructor starts nothing), sets the environment `env` asks for,
// then calls Agent_OnAttach with `options` `calls` times. The child's exit
// status is the first code plus ten times the second (100+ for a setup
// failure).
int AttachCodes(const std::string& options, bool disabled, const char* socket_env, int calls) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv(AGENT_ENV_DISABLE, "1", 1);
    void* lib = ::dlopen(AGENT_LIB, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) ::_exit(101);
    auto on_attach = reinterpret_cast<OnAttachFn>(::dlsym(lib, "Agent_OnAttach"));
    if (on_attach == nullptr) ::_exit(102);
    if (!disabled) ::unsetenv(AGENT_ENV_DISABLE);
    if (socket_env != nullptr) ::setenv(AGENT_ENV_SOCKET, socket_env, 1);
    std::string opts = options;
    int status = 0;
    for (int i = 0, scale = 1; i < calls; ++i, scale *= 10) {
      status += scale * on_attach(nullptr, opts.empty() ? nullptr : opts.data(), nullptr);
    }
    ::_exit(status);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  RemoveStaleAgentSocket(pid);
  return WEXITSTATUS(status);
}

std::string VersionOption(long v) { return AGENT_ATTACH_VERSION_OPTION + std::to_string(v); }

TEST(AgentProtocolTest, AttachCodesAndVersionAreTheHeaders) {
  static_assert(AGENT_ATTACH_OK == 0, "the JVM unloads an agent that does not return 0");
  // Asked for another version: refused with the header's code, whichever
  // way the version is off.
  EXPECT_EQ(AttachCodes(VersionOption(AGENT_PROTOCOL_VERSION + 1), false, nullptr, 1),
            AGENT_ATTACH_VERSION);
  EXPECT_EQ(AttachCodes(VersionOption(AGENT_PROTOCOL_VERSION - 1), false, nullptr, 1),
            AGENT_ATTACH_VERSION);
  // The header's version passes the check (and meets MEMTRIMD_AGENT_DISABLE).
  EXPECT_EQ(AttachCodes(VersionOption(AGENT_PROTOCOL_VERSION), true, nullptr, 1),
            AGENT_ATTACH_DISABLED);
  // Started, then asked again.
  EXPECT_EQ(AttachCodes(VersionOption(AGENT_PROTOCOL_VERSION), false, nullptr, 2),
            AGENT_ATTACH_OK + 10 * AGENT_ATTACH_RUNNING);
  // Cannot start: a socket path longer than a UNIX socket's.
  const std::string too_long = "/tmp/" + std::string(200, 'x');
  EXPECT_EQ(AttachCodes(VersionOption(AGENT_PROTOCOL_VERSION), false, too_long.c_str(), 1),
            AGENT_ATTACH_FAILED);
}

// The keys of a "key=value\n" body.
std::vector<std::string> KeysOf(std::string_view body) {
  std::vector<std::string> keys;
  text::ForEachLineIn(
      body, [&](std::string_view line) { keys.emplace_back(line.substr(0, line.find('='))); });
  return keys;
}

// Every key of `body` is one of `allowed`, and each of `required` is there.
void ExpectKeys(std::string_view verb, std::string_view body,
                std::initializer_list<std::string_view> allowed,
                std::initializer_list<std::string_view> required) {
  const std::set<std::string_view> known(allowed);
  const std::vector<std::string> keys = KeysOf(body);
  const std::set<std::string> seen(keys.begin(), keys.end());
  for (const std::string& k : keys) {
    EXPECT_TRUE(known.count(k)) << verb << ": key '" << k << "' is not in agent_protocol.h";
  }
  for (std::string_view k : required) {
    EXPECT_TRUE(seen.count(std::string(k))) << verb << ": no '" << k << "'";
  }
}

class AgentProtocolProgramTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (pid_ > 0) RemoveStaleAgentSocket(pid_);
  }
  TempDir dir_;
  pid_t pid_ = -1;
};

TEST_F(AgentProtocolProgramTest, EveryVerbIsAnsweredAndParsed) {
  SpawnOptions o;
  o.env = {std::string("LD_PRELOAD=") + AGENT_LIB};
  Process frag =
      StartFragmenter(dir_, {"--threads", "2", "--rounds", "1", "--burst-mib", "4"}, "", o);
  ASSERT_TRUE(frag.running());
  pid_ = frag.pid();
  Result<Target> t = procfs::ReadTarget("/proc", frag.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_TRUE(WaitFor([&] { return agent::AgentCommand(*t, AGENT_VERB_PING).ok(); }, 20s));

  const std::string sampling_on = AGENT_VERB_SAMPLING_ON + std::to_string(1u << 16) +
                                  " " AGENT_SAMPLING_LEASE "30 " AGENT_SAMPLING_MAX_RATE
                                  "5000 " AGENT_SAMPLING_JAVA "1";
  std::set<std::string_view> answered;
  // In the order that makes each answer meaningful: "sites" while the
  // sampler is on, "sampling off" last.
  const std::array<std::string_view, 10> order = {
      AGENT_VERB_PING,       AGENT_VERB_ALLOCATOR,   AGENT_VERB_MALLINFO2,   AGENT_VERB_MALLOC_INFO,
      AGENT_VERB_TRIM,       AGENT_VERB_JVM_BUFFERS, AGENT_VERB_SAMPLING_ON, AGENT_VERB_SITES,
      AGENT_VERB_SITES_LIVE, AGENT_VERB_SAMPLING_OFF};
  for (std::string_view verb : order) {
    SCOPED_TRACE(std::string(verb));
    const std::string command = verb == AGENT_VERB_SAMPLING_ON ? sampling_on : std::string(verb);
    agent::AgentFailure failure = agent::AgentFailure::kUnreachable;
    Result<std::string> body = agent::AgentCommand(*t, command, {}, &failure);
    if (verb == AGENT_VERB_JVM_BUFFERS) {
      // Not a JVM: answered, with status 1 and the reason.
      EXPECT_EQ(failure, agent::AgentFailure::kAnswer) << body.status().message();
      EXPECT_NE(body.status().message().find("JVM"), std::string::npos) << body.status().message();
      // The parser reads the keys the header lists, as a JVM's agent sends them.
      auto parsed = agent::ParseJvmBuffers(
          "direct_count=1\ndirect_capacity=2\ndirect_used=3\nmapped_count=4\n"
          "mapped_capacity=5\nmapped_used=6\ntemp_cache_bytes=7\ntemp_cache_buffers=8\n");
      EXPECT_TRUE(parsed.ok()) << parsed.status().message();
      answered.insert(verb);
      continue;
    }
    ASSERT_TRUE(body.ok()) << body.status().message();
    EXPECT_EQ(failure, agent::AgentFailure::kNone);
    answered.insert(verb);
    if (verb == AGENT_VERB_PING) {
      ExpectKeys(verb, *body, {AGENT_KEYS_PING}, {AGENT_KEYS_PING});
      Result<agent::AgentPing> p = agent::ParseAgentPing(*body);
      ASSERT_TRUE(p.ok()) << p.status().message();
      EXPECT_EQ(p->version, static_cast<uint64_t>(AGENT_PROTOCOL_VERSION));
      EXPECT_EQ(p->pid, static_cast<uint64_t>(t->nspid));
      EXPECT_EQ(p->sampling, false);  // before "sampling on"
    } else if (verb == AGENT_VERB_ALLOCATOR) {
      ExpectKeys(verb, *body,
                 {AGENT_KEYS_ALLOCATOR_WHICH, AGENT_KEYS_ALLOCATOR_GLIBC,
                  AGENT_KEYS_ALLOCATOR_JEMALLOC, AGENT_KEYS_ALLOCATOR_JEMALLOC_DECAY,
                  AGENT_KEYS_ALLOCATOR_TCMALLOC, AGENT_KEYS_ALLOCATOR_MIMALLOC},
                 {AGENT_KEYS_ALLOCATOR_WHICH, AGENT_KEYS_ALLOCATOR_GLIBC});
      Result<agent::AllocatorStats> a = agent::ParseAllocatorStats(*body);
      ASSERT_TRUE(a.ok()) << a.status().message();
    } else if (verb == AGENT_VERB_MALLINFO2) {
      ExpectKeys(verb, *body, {AGENT_KEYS_MALLINFO2}, {AGENT_KEYS_MALLINFO2});
      EXPECT_TRUE(agent::ParseMallinfo2(*body).ok());
    } else if (verb == AGENT_VERB_MALLOC_INFO) {
      Result<jvm::MallocInfo> m = jvm::ParseMallocInfo(*body);
      EXPECT_TRUE(m.ok()) << m.status().message();
    } else if (verb == AGENT_VERB_TRIM) {
      ExpectKeys(verb, *body, {AGENT_KEYS_TRIM, AGENT_KEYS_TRIM_WORDS},
                 {"duration_ns", "rss_before", "rss_after", "result", AGENT_KEYS_TRIM_WORDS});
      Result<agent::AgentTrim> tr = agent::ParseAgentTrim(*body);
      ASSERT_TRUE(tr.ok()) << tr.status().message();
      EXPECT_EQ(tr->allocator, Allocator::kGlibc);
    } else if (verb == AGENT_VERB_SAMPLING_ON) {
      ExpectKeys(verb, *body, {AGENT_KEYS_SAMPLING_ON}, {AGENT_KEYS_SAMPLING_ON});
      Result<agent::SamplingStarted> s = agent::ParseSamplingStarted(*body);
      ASSERT_TRUE(s.ok()) << s.status().message();
      EXPECT_EQ(s->period, 1u << 16);
      EXPECT_EQ(s->lease_s, 30u);
      EXPECT_EQ(s->max_rate, 5000u);
      // "ping" now says so, with the lease left, and renews nothing.
      Result<std::string> ping = agent::AgentCommand(*t, AGENT_VERB_PING);
      ASSERT_TRUE(ping.ok()) << ping.status().message();
      Result<agent::AgentPing> p = agent::ParseAgentPing(*ping);
      ASSERT_TRUE(p.ok()) << p.status().message();
      EXPECT_EQ(p->sampling, true);
      EXPECT_GE(p->period, 1u << 16);
      EXPECT_GT(p->lease_left_ms, 0u);
      EXPECT_LE(p->lease_left_ms, 30000u);
      // Options the agent does not know, or out of their bounds: refused.
      for (const char* bad : {" lease=0", " lease=86401", " max_rate=1000001", " lease=", " x=1",
                              " lease=5 max_rate", " lease=5x", " java=2", " java="}) {
        agent::AgentFailure f = agent::AgentFailure::kNone;
        Result<std::string> r = agent::AgentCommand(
            *t, AGENT_VERB_SAMPLING_ON + std::to_string(1u << 16) + bad, {}, &f);
        EXPECT_FALSE(r.ok()) << bad;
        EXPECT_EQ(f, agent::AgentFailure::kAnswer) << bad;
      }
    } else if (verb == AGENT_VERB_SITES) {
      std::string_view head = *body;
      head = head.substr(0, head.find(AGENT_SITES_STACK " "));
      ExpectKeys(verb, head, {AGENT_KEYS_SITES, AGENT_KEYS_SITES_HOOKS, AGENT_KEYS_SITES_JAVA},
                 {"on", "period", "generation", "started_ns", "samples", "live_samples",
                  "dropped_live", "dropped_stacks", "sampler_bytes", "hooked_objects", "stacks",
                  "base_period", "max_rate", "raised", "lease_s", "lease_left_ms", "lease_ended",
                  AGENT_KEYS_SITES_HOOKS, AGENT_KEYS_SITES_JAVA});
      Result<agent::AgentSites> s = agent::ParseAgentSites(*body);
      ASSERT_TRUE(s.ok()) << s.status().message();
      EXPECT_TRUE(s->on);
      EXPECT_EQ(s->base_period, 1u << 16);
      EXPECT_EQ(s->max_rate, 5000u);
      EXPECT_EQ(s->lease_s, 30u);
      EXPECT_GT(s->lease_left_ms, 29000u);  // renewed by this read
      EXPECT_FALSE(s->has_live);            // only "sites live" lists them
      // Not a JVM: the Java frame keys are there, and no Java frame.
      EXPECT_TRUE(s->java_counted);
      EXPECT_FALSE(s->java_frames);
      EXPECT_EQ(s->java_walks, 0u);
      EXPECT_TRUE(s->java.empty());
    } else if (verb == AGENT_VERB_SITES_LIVE) {
      std::string_view head = *body;
      const std::size_t live_at = head.find("\n" AGENT_SITES_LIVE " ");
      head = head.substr(0, std::min(head.find(AGENT_SITES_STACK " "),
                                     live_at == std::string_view::npos ? live_at : live_at + 1));
      ExpectKeys(
          verb, head,
          {AGENT_KEYS_SITES, AGENT_KEYS_SITES_HOOKS, AGENT_KEYS_SITES_LIVE, AGENT_KEYS_SITES_JAVA},
          {"on", "period", "generation", "stacks", "live_samples", AGENT_KEYS_SITES_LIVE,
           AGENT_KEYS_SITES_JAVA});
      Result<agent::AgentSites> s = agent::ParseAgentSites(*body);
      ASSERT_TRUE(s.ok()) << s.status().message();
      ASSERT_TRUE(s->has_live);
      // Every live sample listed (nothing near the buffer's bound; the
      // fragmenter may hold none once ready), each within its stack's
      // live bytes, its range in the program's memory.
      EXPECT_EQ(s->live_seen, s->live.size());
      std::vector<uint64_t> weights(s->stacks.size(), 0);
      for (const agent::LiveSample& l : s->live) {
        ASSERT_LT(l.stack, s->stacks.size());
        EXPECT_GE(l.weight, l.size);
        weights[l.stack] += l.weight;
      }
      for (std::size_t i = 0; i < s->stacks.size(); ++i) {
        // Read a moment apart while the program runs: about its live bytes.
        EXPECT_LE(weights[i], s->stacks[i].values.live_bytes * 2 + (1u << 20)) << i;
      }
      Result<std::string> maps = ReadSmallFile(t->proc_dir + "/maps", 16u << 20);
      ASSERT_TRUE(maps.ok());
      Result<std::vector<procfs::MapsEntry>> entries = procfs::ParseMaps(*maps);
      ASSERT_TRUE(entries.ok());
      std::size_t mapped = 0;
      for (const agent::LiveSample& l : s->live) {
        for (const procfs::MapsEntry& e : *entries) {
          if (l.ptr >= e.start && l.ptr + l.size <= e.end) {
            ++mapped;
            break;
          }
        }
      }
      // Freed since the answer at most a few.
      EXPECT_GE(mapped * 10, s->live.size() * 9) << mapped << " of " << s->live.size();
    } else if (verb == AGENT_VERB_SAMPLING_OFF) {
      ExpectKeys(verb, *body, {AGENT_KEYS_SAMPLING_OFF}, {AGENT_KEYS_SAMPLING_OFF});
      Result<bool> was = agent::ParseSamplingStopped(*body);
      ASSERT_TRUE(was.ok()) << was.status().message();
      EXPECT_TRUE(*was);
    }
  }
  // Every verb the header lists was sent: a verb added there without a
  // case here fails.
  for (std::string_view verb : {AGENT_VERBS}) {
    EXPECT_TRUE(answered.count(verb)) << "verb '" << verb << "' not exercised";
  }
  EXPECT_EQ(answered.size(), std::size(std::initializer_list<std::string_view>{AGENT_VERBS}));

  // A verb outside the header is refused, with the agent's reason.
  agent::AgentFailure failure = agent::AgentFailure::kUnreachable;
  Result<std::string> unknown = agent::AgentCommand(*t, "no_such_verb", {}, &failure);
  EXPECT_FALSE(unknown.ok());
  EXPECT_EQ(failure, agent::AgentFailure::kAnswer);
}

}  // namespace
}  // namespace memtrimd::testing
