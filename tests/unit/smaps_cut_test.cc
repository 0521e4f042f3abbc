// A smaps read cut short is not published: text that ends inside a record is
// a parse error, and a read after which the process is not the same live
// one (exited, a zombie, or its pid reused) is discarded by the collector.
// Recorded fixtures (tests/fixtures/proc/fragmenter), cut or altered.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "collectors/common/target.h"
#include "collectors/glibc/glibc_heap_collector.h"
#include "collectors/procfs/proc_stat.h"
#include "collectors/procfs/smaps.h"
#include "collectors/procfs/target_reader.h"
#include "collectors/sample.h"
#include "tests/unit/fixtures.h"

namespace memtrimd {
namespace {

namespace fs = std::filesystem;

// Offset of the `n`th mapping header line from the end (1: the last).
std::size_t NthLastHeader(const std::string& text, int n) {
  static const std::regex header("^[0-9a-f]+-[0-9a-f]+ ");
  std::vector<std::size_t> starts;
  for (std::size_t pos = 0; pos < text.size(); pos = text.find('\n', pos) + 1) {
    if (std::regex_search(text.substr(pos, 40), header)) starts.push_back(pos);
    if (text.find('\n', pos) == std::string::npos) break;
  }
  EXPECT_GE(starts.size(), static_cast<std::size_t>(n));
  return starts[starts.size() - static_cast<std::size_t>(n)];
}

TEST(SmapsCut, TextEndingInsideARecordIsAnError) {
  const std::string smaps = test::ReadFixture("proc/fragmenter/smaps");
  ASSERT_TRUE(procfs::ParseSmaps(smaps).ok());
  // The last record's header and its first three field lines only.
  std::size_t last = NthLastHeader(smaps, 1);
  std::size_t cut = last;
  for (int i = 0; i < 4; ++i) cut = smaps.find('\n', cut) + 1;
  Result<std::vector<procfs::Mapping>> r = procfs::ParseSmaps(smaps.substr(0, cut));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kParseError);
  EXPECT_NE(r.status().message().find("VmFlags"), std::string::npos) << r.status().message();
  // The same through the streaming parser, with its storage reused after.
  procfs::SmapsParser p;
  std::string_view rest(smaps.data(), cut);
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    p.Feed(rest.substr(0, nl));
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
  }
  EXPECT_FALSE(p.Finish().ok());
  EXPECT_TRUE(procfs::ParseSmaps(smaps).ok()) << "a later whole read is fine";
}

TEST(SmapsCut, TextEndingAtARecordBoundaryParses) {
  // What an exit during the walk produces (the kernel ends the file after a
  // whole record): the parser cannot tell, so the collector checks the
  // process afterwards (below).
  const std::string smaps = test::ReadFixture("proc/fragmenter/smaps");
  Result<std::vector<procfs::Mapping>> whole = procfs::ParseSmaps(smaps);
  ASSERT_TRUE(whole.ok());
  Result<std::vector<procfs::Mapping>> r =
      procfs::ParseSmaps(smaps.substr(0, NthLastHeader(smaps, 10)));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->size() + 10, whole->size());
}

// A copy of a recorded /proc/<pid> with its stat line changed by `edit`.
class ProcCopy {
 public:
  ProcCopy() {
    std::string tmpl = (fs::temp_directory_path() / "memtrimd-smaps-cut.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) path_ = tmpl;
    for (const char* f : {"smaps", "stat", "status"}) {
      fs::copy_file(test::FixturePath(std::string("proc/fragmenter/") + f), path_ + "/" + f);
    }
  }
  ~ProcCopy() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  void WriteStat(const std::string& text) { std::ofstream(path_ + "/stat") << text; }
  std::string Stat() const { return test::ReadWhole(path_ + "/stat"); }

 private:
  std::string path_;
};

// The fixture process as the daemon knew it when it chose it.
Target FixtureTarget(const ProcCopy& dir) {
  Target t;
  Result<procfs::ProcStat> st = procfs::ParseProcStat(dir.Stat());
  EXPECT_TRUE(st.ok());
  t.pid = st.ok() ? st->pid : 0;
  t.start_ticks = st.ok() ? st->start_ticks : 0;
  t.proc_dir = dir.path();
  return t;
}

Status CollectFrom(const Target& t, TargetSample& out) {
  glibc::GlibcHeapOptions g;
  g.confirm_with_heap_info = false;  // no such process to read heap_info from
  glibc::GlibcHeapCollector c(g);
  return c.Collect(t, out);
}

TEST(SmapsCut, ReadOfTheSameLiveProcessIsPublished) {
  ProcCopy dir;
  TargetSample out;
  Status st = CollectFrom(FixtureTarget(dir), out);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_TRUE(out.glibc.has_value());
  EXPECT_GT(out.glibc->mappings, 0u);
}

TEST(SmapsCut, ReadAfterWhichTheTargetIsAZombieIsDiscarded) {
  ProcCopy dir;
  Target t = FixtureTarget(dir);
  std::string stat = dir.Stat();
  std::size_t state = stat.rfind(')') + 2;
  for (char z : {'Z', 'X'}) {
    stat[state] = z;
    dir.WriteStat(stat);
    TargetSample out;
    Status st = CollectFrom(t, out);
    EXPECT_EQ(st.code(), ErrorCode::kNotFound) << z << ": " << st.message();
    EXPECT_NE(st.message().find("discarded"), std::string::npos) << st.message();
    EXPECT_FALSE(out.glibc.has_value()) << z;
    EXPECT_FALSE(procfs::ReadStartTicks(dir.path()).ok()) << "a zombie is not a live target";
  }
}

TEST(SmapsCut, ReadAfterWhichThePidBelongsToAnotherProcessIsDiscarded) {
  ProcCopy dir;
  Target t = FixtureTarget(dir);
  t.start_ticks += 1;  // the pid now names a process started later
  TargetSample out;
  Status st = CollectFrom(t, out);
  EXPECT_EQ(st.code(), ErrorCode::kNotFound) << st.message();
  EXPECT_FALSE(out.glibc.has_value());
}

TEST(SmapsCut, ReadAfterWhichTheProcessIsGoneIsDiscarded) {
  ProcCopy dir;
  Target t = FixtureTarget(dir);
  fs::remove(dir.path() + "/stat");
  TargetSample out;
  Status st = CollectFrom(t, out);
  EXPECT_EQ(st.code(), ErrorCode::kNotFound) << st.message();
  EXPECT_FALSE(out.glibc.has_value());
}

TEST(ProcStat, ZombieAndDeadStatesAreExited) {
  for (char c : {'Z', 'X', 'x'}) {
    procfs::ProcStat s;
    s.state = c;
    EXPECT_TRUE(s.Exited()) << c;
  }
  for (char c : {'R', 'S', 'D', 'T', 't', 'I'}) {
    procfs::ProcStat s;
    s.state = c;
    EXPECT_FALSE(s.Exited()) << c;
  }
}

}  // namespace
}  // namespace memtrimd
