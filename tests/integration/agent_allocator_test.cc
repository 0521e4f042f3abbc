// The preload agent under every allocator a target may run on: the
// fragmenter with glibc's malloc, with jemalloc, tcmalloc and mimalloc
// preloaded before the agent (the usual fix after a glibc fragmentation
// incident), linked against each, and jemalloc linked into the executable.
// The agent must name the allocator and the object that serves malloc,
// report that allocator's own figures (checked against the kernel's RSS),
// and trim with its own release call. A glibc program that loads jemalloc
// without it serving malloc (dlopen, or a dependency after libc) is still
// glibc.

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "collectors/agent/client/agent_client.h"
#include "collectors/agent/client/allocator_stats.h"
#include "collectors/procfs/target_reader.h"
#include "tests/integration/harness.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

struct Expected {
  Allocator allocator;
  std::string object;  // the served object's file name (or the whole path)
  std::vector<std::string> keys;
  std::string call;
};

Expected Glibc() {
  return {Allocator::kGlibc,
          "libc.so.6",
          {"arena", "hblkhd", "uordblks", "fordblks", "keepcost"},
          "malloc_trim"};
}

Expected Jemalloc(std::string object = "libjemalloc.so.2") {
  return {Allocator::kJemalloc,
          std::move(object),
          {"allocated", "active", "resident", "mapped", "retained", "metadata", "dirty", "muzzy"},
          "arena.4096.purge"};
}

Expected Tcmalloc() {
  return {Allocator::kTcmalloc,
          "libtcmalloc_minimal.so.4",
          {"allocated", "heap_size", "pageheap_free", "pageheap_unmapped", "central_cache_free",
           "transfer_cache_free", "thread_cache_free"},
          "ReleaseFreeMemory"};
}

Expected Mimalloc() {
  return {Allocator::kMimalloc, "libmimalloc.so.2", {"committed", "committed_peak"}, "mi_collect"};
}

class AgentAllocatorTest : public ::testing::Test {
 protected:
  // The fragmenter (or `binary`) with `preload` (an allocator's shared
  // object, or "") and then the agent in LD_PRELOAD.
  Process StartFragmenterWith(const std::string& preload, const std::string& binary = "") {
    SpawnOptions o;
    o.env.push_back("LD_PRELOAD=" + (preload.empty() ? "" : preload + ":") + AGENT_LIB);
    o.stderr_path = dir_ / "fragmenter.err";
    Process p =
        StartFragmenter(dir_, {"--threads", "4", "--rounds", "2", "--burst-mib", "16"}, binary, o);
    started_.push_back(p.pid());
    return p;
  }

  // Asks "allocator" and "trim" and checks both against `want`.
  void Check(Process& p, const Expected& want) {
    ASSERT_TRUE(p.running()) << ReadFile(dir_ / "fragmenter.err");
    Result<Target> t = procfs::ReadTarget("/proc", p.pid());
    ASSERT_TRUE(t.ok()) << t.status().message();

    Result<std::string> body = agent::AgentCommand(*t, "allocator");
    ASSERT_TRUE(body.ok()) << body.status().message();
    // The workload is idle once ready: its RSS is what the figures describe.
    const uint64_t rss_anon = ReadStatusIndependently(p.pid()).rss_anon;
    std::cout << *body << "RssAnon " << rss_anon << "\n";
    Result<agent::AllocatorStats> s = agent::ParseAllocatorStats(*body);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->allocator, want.allocator) << AllocatorName(s->allocator);
    if (want.object.front() == '/') {
      EXPECT_EQ(s->object, want.object);
    } else {
      EXPECT_EQ(fs::path(s->object).filename(), want.object) << s->object;
      EXPECT_EQ(s->object.front(), '/') << s->object;
    }
    for (const std::string& key : want.keys) {
      EXPECT_TRUE(s->Get(key)) << "no " << key;
    }
    if (want.allocator == Allocator::kJemalloc) {
      EXPECT_TRUE(s->dirty_decay_ms) << "no dirty_decay_ms";
      EXPECT_TRUE(s->muzzy_decay_ms) << "no muzzy_decay_ms";
    }

    // What the allocator holds from the system is most of the process's
    // anonymous memory: the fragmenter's heap is all of it but thread stacks
    // and the loader's few pages. (mimalloc commits ahead of touching.)
    agent::AllocatorMeasures m = agent::CommonMeasures(*s);
    ASSERT_TRUE(m.held);
    EXPECT_GE(*m.held, rss_anon / 2);
    EXPECT_LE(*m.held, rss_anon * 3);
    if (m.allocated) {
      EXPECT_GT(*m.allocated, 0u);
      EXPECT_LE(*m.allocated, *m.held);
    }
    if (m.free_kept) {
      EXPECT_LE(*m.free_kept, *m.held);
    }

    Result<agent::AgentTrim> trim = agent::AgentTrimNow(*t);
    ASSERT_TRUE(trim.ok()) << trim.status().message();
    std::cout << "trim: " << trim->call << " rss " << trim->rss_before << " -> " << trim->rss_after
              << " free kept "
              << (trim->free_kept_before ? std::to_string(*trim->free_kept_before) : "-") << " -> "
              << (trim->free_kept_after ? std::to_string(*trim->free_kept_after) : "-") << "\n";
    EXPECT_EQ(trim->allocator, want.allocator);
    EXPECT_EQ(trim->call, want.call);
    EXPECT_EQ(trim->result, 1);
    const bool reports_free_kept =
        want.allocator == Allocator::kJemalloc || want.allocator == Allocator::kTcmalloc;
    EXPECT_EQ(trim->free_kept_before.has_value(), reports_free_kept);
    EXPECT_EQ(trim->free_kept_after.has_value(), reports_free_kept);
    if (trim->free_kept_before && trim->free_kept_after) {
      EXPECT_LE(*trim->free_kept_after, *trim->free_kept_before);
    }
    EXPECT_TRUE(p.running());
  }

  // Stopped with SIGTERM so the agent removes its socket; a killed one's is
  // removed here.
  void TearDown() override {
    for (pid_t pid : started_) RemoveStaleAgentSocket(pid);
  }

  TempDir dir_;
  std::vector<pid_t> started_;
};

TEST_F(AgentAllocatorTest, Glibc) {
  Process p = StartFragmenterWith("");
  Check(p, Glibc());
}

TEST_F(AgentAllocatorTest, JemallocPreloaded) {
  ASSERT_STRNE(JEMALLOC_SO, "") << "libjemalloc2 is not installed (scripts/install-deps.sh)";
  Process p = StartFragmenterWith(JEMALLOC_SO);
  Check(p, Jemalloc());
}

TEST_F(AgentAllocatorTest, TcmallocPreloaded) {
  ASSERT_STRNE(TCMALLOC_SO, "") << "libtcmalloc-minimal4 is not installed";
  Process p = StartFragmenterWith(TCMALLOC_SO);
  Check(p, Tcmalloc());
}

TEST_F(AgentAllocatorTest, MimallocPreloaded) {
  ASSERT_STRNE(MIMALLOC_SO, "") << "libmimalloc2.0 is not installed";
  Process p = StartFragmenterWith(MIMALLOC_SO);
  Check(p, Mimalloc());
}

// Linked rather than preloaded: the allocator is a DT_NEEDED of the program.
TEST_F(AgentAllocatorTest, Linked) {
  for (const auto& [binary, want] :
       std::vector<std::pair<std::string, Expected>>{{FRAGMENTER_JEMALLOC_BIN, Jemalloc()},
                                                     {FRAGMENTER_TCMALLOC_BIN, Tcmalloc()},
                                                     {FRAGMENTER_MIMALLOC_BIN, Mimalloc()}}) {
    SCOPED_TRACE(binary);
    ASSERT_FALSE(binary.empty()) << "an allocator's fragmenter was not built";
    Process p = StartFragmenterWith("", binary);
    Check(p, want);
    EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
  }
}

// jemalloc linked into the executable (exported with -rdynamic): the object
// is the executable itself.
TEST_F(AgentAllocatorTest, JemallocLinkedIntoTheExecutable) {
  const std::string binary = FRAGMENTER_JEMALLOC_STATIC_BIN;
  ASSERT_FALSE(binary.empty()) << "fragmenter_jemalloc_static was not built";
  Process p = StartFragmenterWith("", binary);
  Check(p, Jemalloc(fs::canonical(binary).string()));
}

// A jemalloc that the program loads but that does not serve malloc says
// nothing about the program's heap: the agent must stay with glibc.
class AgentAllocatorGlibcTest : public AgentAllocatorTest {
 protected:
  void CheckGlibc(std::vector<std::string> argv, std::vector<std::string> env) {
    const std::string ready = dir_ / ("ready." + std::to_string(++count_));
    argv.insert(argv.end(), {"--ready-file", ready});
    SpawnOptions o;
    o.env = std::move(env);
    o.env.push_back(std::string("LD_PRELOAD=") + AGENT_LIB);
    o.stderr_path = dir_ / "workload.err";
    Process p(argv, o);
    started_.push_back(p.pid());
    ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !p.running(); }, 60s) &&
                fs::exists(ready))
        << ReadFile(dir_ / "workload.err");
    // The library is really there.
    EXPECT_NE(ReadFile("/proc/" + std::to_string(p.pid()) + "/maps").find("libjemalloc.so.2"),
              std::string::npos);
    Result<Target> t = procfs::ReadTarget("/proc", p.pid());
    ASSERT_TRUE(t.ok()) << t.status().message();
    Result<std::string> body = agent::AgentCommand(*t, "allocator");
    ASSERT_TRUE(body.ok()) << body.status().message();
    Result<agent::AllocatorStats> s = agent::ParseAllocatorStats(*body);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->allocator, Allocator::kGlibc) << *body;
    EXPECT_EQ(fs::path(s->object).filename(), "libc.so.6");
    EXPECT_TRUE(s->Get("arena"));
    Result<agent::AgentTrim> trim = agent::AgentTrimNow(*t);
    ASSERT_TRUE(trim.ok()) << trim.status().message();
    EXPECT_EQ(trim->allocator, Allocator::kGlibc);
    EXPECT_EQ(trim->call, "malloc_trim");
    EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
  }

  int count_ = 0;
};

// dlopen()ed by the program, locally and into the global scope. (jemalloc's
// initial-exec TLS needs room in the static TLS block for a dlopen.)
TEST_F(AgentAllocatorGlibcTest, DlopenedJemalloc) {
  ASSERT_STRNE(JEMALLOC_SO, "") << "libjemalloc2 is not installed";
  const std::string tls = "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=1048576";
  {
    SCOPED_TRACE("RTLD_LOCAL");
    CheckGlibc({DLOPEN_ALLOCATOR_BIN, "--library", JEMALLOC_SO}, {tls});
  }
  {
    SCOPED_TRACE("RTLD_GLOBAL");
    CheckGlibc({DLOPEN_ALLOCATOR_BIN, "--library", JEMALLOC_SO, "--global"}, {tls});
  }
}

// Loaded from the start as a dependency after libc.so.6: jemalloc's mallctl
// is what dlsym(RTLD_DEFAULT) finds, but malloc is glibc's.
TEST_F(AgentAllocatorGlibcTest, JemallocLinkedAfterLibc) {
  const std::string binary = GLIBC_BESIDE_JEMALLOC_BIN;
  ASSERT_FALSE(binary.empty()) << "glibc_beside_jemalloc was not built";
  CheckGlibc({binary}, {});
}

// malloc served by something the agent has no release call for (jemalloc
// linked in with its API hidden): "unknown", the executable named, and a
// trim refused with the reason instead of a malloc_trim on glibc's unused
// heap.
TEST_F(AgentAllocatorTest, UnknownAllocatorIsNotTrimmed) {
  const std::string binary = HIDDEN_ALLOCATOR_BIN;
  ASSERT_FALSE(binary.empty()) << "hidden_allocator was not built";
  const std::string ready = dir_ / "hidden.ready";
  SpawnOptions o;
  o.env.push_back(std::string("LD_PRELOAD=") + AGENT_LIB);
  o.stderr_path = dir_ / "hidden.err";
  Process p({binary, "--ready-file", ready}, o);
  started_.push_back(p.pid());
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !p.running(); }, 60s) && fs::exists(ready))
      << ReadFile(dir_ / "hidden.err");
  Result<Target> t = procfs::ReadTarget("/proc", p.pid());
  ASSERT_TRUE(t.ok()) << t.status().message();

  Result<std::string> body = agent::AgentCommand(*t, "allocator");
  ASSERT_TRUE(body.ok()) << body.status().message();
  Result<agent::AllocatorStats> s = agent::ParseAllocatorStats(*body);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->allocator, Allocator::kUnknown) << *body;
  EXPECT_EQ(s->object, fs::canonical(binary).string());
  EXPECT_TRUE(s->bytes.empty());

  agent::AgentFailure failure = agent::AgentFailure::kNone;
  Result<std::string> trim = agent::AgentCommand(*t, "trim", {}, &failure);
  ASSERT_FALSE(trim.ok());
  EXPECT_EQ(failure, agent::AgentFailure::kAnswer);
  EXPECT_EQ(trim.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(trim.status().message().find("malloc is served by " + fs::canonical(binary).string() +
                                         ", which has no release call memtrimd knows"),
            std::string::npos)
      << trim.status().message();
  EXPECT_EQ(p.Stop(SIGTERM, 30s), 0);
}

}  // namespace
}  // namespace memtrimd::testing
