// The bounded readers on what a target can put where memtrimd expects a
// /proc, cgroup or perf data file: a FIFO fails at once (it blocked the
// sampling thread for good), a symlink is not followed, a regular file is
// read as before.
#include "collectors/common/file_reader.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <vector>

namespace memtrimd {
namespace {

namespace fs = std::filesystem;

class FileReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/memtrimd-reader.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Runs `read` on a thread; a read still blocked after 10 s is a failure,
// and the FIFO is then opened for writing and closed so that the blocked
// open returns (end of file) and the thread can be joined.
template <typename Read>
void ExpectFailsWithoutBlocking(const fs::path& fifo, Read read) {
  std::future<Status> done = std::async(std::launch::async, read);
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "reading a FIFO blocked";
    int w = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
    if (w >= 0) ::close(w);
  }
  Status s = done.get();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a regular file"), std::string::npos) << s.message();
}

TEST_F(FileReaderTest, AFifoFailsAtOnceInsteadOfBlocking) {
  const fs::path fifo = dir_ / "memory.current";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectFailsWithoutBlocking(fifo, [&] { return ReadSmallFile(fifo).status(); });
  ExpectFailsWithoutBlocking(
      fifo, [&] { return ForEachLine(fifo.string(), 1 << 20, [](std::string_view) {}); });
}

TEST_F(FileReaderTest, ASymlinkIsNotFollowed) {
  const fs::path real = dir_ / "real";
  std::ofstream(real) << "secret\n";
  fs::create_symlink(real, dir_ / "link");
  Result<std::string> r = ReadSmallFile(dir_ / "link");
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(ReadSmallFile(real).ok());
}

TEST_F(FileReaderTest, ARegularFileIsReadWhole) {
  const fs::path f = dir_ / "status";
  std::ofstream(f) << "Name:\tjava\nVmRSS:\t  100 kB\n";
  Result<std::string> r = ReadSmallFile(f);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "Name:\tjava\nVmRSS:\t  100 kB\n");
  std::vector<std::string> lines;
  ASSERT_TRUE(ForEachLine(f, 1 << 20, [&](std::string_view l) { lines.emplace_back(l); }).ok());
  EXPECT_EQ(lines, (std::vector<std::string>{"Name:\tjava", "VmRSS:\t  100 kB"}));
  // /proc files are regular files too.
  EXPECT_TRUE(ReadSmallFile("/proc/self/status").ok());
}

}  // namespace
}  // namespace memtrimd
