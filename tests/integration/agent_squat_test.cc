// The preload agent's default socket name, /tmp/.memtrimd_agent.<pid>.<start
// ticks>, can be predicted: a user may plant files at the names of the next
// pids and start times in the shared, sticky /tmp, where the program cannot
// remove them. The agent then listens at that name plus a random suffix,
// and memtrimd finds it there; decoys of that form are refused by their
// owner. Before, the agent refused the taken name and did not start.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"

namespace memtrimd::testing {
namespace {

namespace fs = std::filesystem;

constexpr uid_t kNobody = 65534;

enum class Squat { kFile, kLiveSocket };

// Sockets at "<default>.<16 hex>" in /tmp.
std::vector<std::string> RandomVariants(const std::string& default_path) {
  std::vector<std::string> out;
  const std::string prefix = fs::path(default_path).filename().string() + ".";
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/tmp", ec)) {
    const std::string name = e.path().filename().string();
    if (name.size() == prefix.size() + 16 && name.rfind(prefix, 0) == 0) {
      out.push_back(e.path().string());
    }
  }
  return out;
}

class AgentSquatTest : public ::testing::TestWithParam<Squat> {};

TEST_P(AgentSquatTest, APlantedDefaultNameDoesNotKeepTheAgentFromServing) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to act as uid " << kNobody;
  TempDir dir;
  const std::string go = dir / "go";
  const std::string ready = dir / "fragmenter.ready";
  // The shell waits for `go` and then becomes the program with the agent
  // preloaded: same pid and start time, so the name is known beforehand.
  Process p({"/bin/sh", "-c",
             "while [ ! -e \"$1\" ]; do sleep 0.05; done; export LD_PRELOAD=\"$2\"; exec \"$3\" "
             "--quiet --ready-file \"$4\" --threads 2 --rounds 1 --burst-mib 16",
             "entrypoint", go, AGENT_LIB, FragmenterBin(), ready});
  ASSERT_TRUE(p.running());
  const std::string planted = AgentSocketOf(p.pid());
  ASSERT_FALSE(fs::exists(planted));

  SpawnOptions as_nobody;
  as_nobody.uid = kNobody;
  as_nobody.gid = kNobody;
  Process squatter;
  // Decoys of the random form too, nobody's, more than the number of such
  // names memtrimd tries: it must neither take one nor be kept from the
  // agent's own by them.
  const std::string decoy = planted + ".0123456789abcdef";
  // Held by pointer: a moved-from ScopedUnlink would remove its file.
  std::vector<std::unique_ptr<ScopedUnlink>> more_decoys;
  for (int i = 0; i < 12; ++i) {
    const std::string path = planted + ".00000000000000" + (i < 10 ? "0" : "") + std::to_string(i);
    RunResult touch = RunCommand({"touch", path}, as_nobody);
    ASSERT_EQ(touch.exit_code, 0) << touch.err;
    more_decoys.push_back(std::unique_ptr<ScopedUnlink>(new ScopedUnlink{path}));
  }
  const std::string bind_py =
      "import socket,sys,time\n"
      "for path in sys.argv[1:]:\n"
      "  s=socket.socket(socket.AF_UNIX); s.bind(path); s.listen(); globals()[path]=s\n"
      "time.sleep(600)\n";
  if (GetParam() == Squat::kFile) {
    RunResult touch = RunCommand({"touch", planted}, as_nobody);
    ASSERT_EQ(touch.exit_code, 0) << touch.err;
    squatter = Process({"python3", "-c", bind_py, decoy}, as_nobody);
  } else {
    squatter = Process({"python3", "-c", bind_py, planted, decoy}, as_nobody);
  }
  ScopedUnlink unlink_planted{planted}, unlink_decoy{decoy};
  ASSERT_TRUE(WaitFor([&] { return fs::exists(planted) && fs::exists(decoy); }, 30s));
  struct stat st;
  ASSERT_EQ(::lstat(planted.c_str(), &st), 0);
  ASSERT_EQ(st.st_uid, kNobody);

  WriteFile(go, "");
  ASSERT_TRUE(WaitFor([&] { return fs::exists(ready) || !p.running(); }, 60s));
  ASSERT_TRUE(p.running());

  // The agent serves at a random variant of the name, its own (root's).
  std::vector<std::string> variants;
  ASSERT_TRUE(WaitFor(
      [&] {
        variants.clear();
        for (const std::string& v : RandomVariants(planted)) {
          struct stat vs;
          if (v != decoy && ::lstat(v.c_str(), &vs) == 0 && S_ISSOCK(vs.st_mode) &&
              vs.st_uid != kNobody) {
            variants.push_back(v);
          }
        }
        return variants.size() == 1;
      },
      30s));
  ASSERT_EQ(::lstat(variants[0].c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // memtrimd reaches it (the decoy refused by its owner) and trims.
  RunResult r = RunCommand({MemtrimdBin(), "trim", "--pid", std::to_string(p.pid()), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::optional<JsonValue> trim = ParseJson(r.out);
  ASSERT_TRUE(trim.has_value()) << r.out;
  const JsonValue* backend = trim->Get("backend");
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->text, "agent");

  // The planted names are left to their owner.
  ASSERT_EQ(::lstat(planted.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, kNobody);
  EXPECT_TRUE(fs::exists(decoy));
  for (const auto& d : more_decoys) EXPECT_TRUE(fs::exists(d->path)) << d->path;

  p.Kill();
  squatter.Kill();
  RemoveStaleAgentSocket(p.pid());
}

INSTANTIATE_TEST_SUITE_P(Squats, AgentSquatTest,
                         ::testing::Values(Squat::kFile, Squat::kLiveSocket),
                         [](const ::testing::TestParamInfo<Squat>& squat) {
                           return squat.param == Squat::kFile ? std::string("AFile")
                                                              : std::string("ALiveSocket");
                         });

}  // namespace
}  // namespace memtrimd::testing
