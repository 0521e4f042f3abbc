// jvm::FindOwnAgentFrom: where memtrimd finds the agent it loads into a JVM
// (--jvm.load-agent), in each layout it is installed or built in. The .deb
// and `cmake --install` put it in lib/memtrimd/ (a private plugin, beside
// the web module), not in the loader's lib/.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "collectors/jvm/agent_load.h"

namespace memtrimd::jvm {
namespace {

namespace fs = std::filesystem;

class OwnAgent : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "memtrimd_own_agent.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    fs::create_directories(root_ / "bin");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string Put(const std::string& rel) {
    fs::path p = root_ / rel / std::string(kAgentFileName);
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "not an ELF file; only its place counts";
    return p.string();
  }
  std::string Bin() const { return (root_ / "bin").string(); }

  fs::path root_;
};

TEST_F(OwnAgent, InstalledAsAPrivatePlugin) {
  std::string want = Put("lib/memtrimd");
  Result<std::string> got = FindOwnAgentFrom(Bin());
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(fs::weakly_canonical(*got), fs::weakly_canonical(want));
}

TEST_F(OwnAgent, PrivatePluginBeforeAnOlderInstallsLib) {
  Put("lib");
  std::string want = Put("lib/memtrimd");
  Result<std::string> got = FindOwnAgentFrom(Bin());
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(fs::weakly_canonical(*got), fs::weakly_canonical(want));
}

TEST_F(OwnAgent, BesideTheExecutableFirst) {
  Put("lib/memtrimd");
  std::string want = Put("bin");
  Result<std::string> got = FindOwnAgentFrom(Bin());
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(fs::weakly_canonical(*got), fs::weakly_canonical(want));
}

TEST_F(OwnAgent, OlderInstallsLibStillFound) {
  std::string want = Put("lib");
  Result<std::string> got = FindOwnAgentFrom(Bin());
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(fs::weakly_canonical(*got), fs::weakly_canonical(want));
}

TEST_F(OwnAgent, NowhereSaysWhereItLooked) {
  Result<std::string> got = FindOwnAgentFrom(Bin());
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), ErrorCode::kNotFound);
  EXPECT_NE(got.status().message().find("lib/memtrimd"), std::string::npos)
      << got.status().message();
}

}  // namespace
}  // namespace memtrimd::jvm
