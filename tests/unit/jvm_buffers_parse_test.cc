// agent::ParseJvmBuffers (collectors/agent/client/jvm_buffers.h) against jvm_buffers
// answers recorded from libmemtrimd_agent.so in real JVMs
// (fixtures/agent/jvm_buffers_jdk*.txt, with the JVMs' own BufferPoolMXBean
// figures beside them in *.truth) and against malformed input.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>

#include "collectors/agent/client/jvm_buffers.h"
#include "tests/unit/fixtures.h"

namespace memtrimd::agent {
namespace {

// BufferPools' ready file: "key=value" lines.
std::map<std::string, uint64_t> ReadTruth(const std::string& name) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(test::ReadFixture("agent/" + name));
  std::string line;
  while (std::getline(in, line)) {
    std::size_t eq = line.find('=');
    if (eq != std::string::npos) out[line.substr(0, eq)] = std::stoull(line.substr(eq + 1));
  }
  return out;
}

void ExpectPoolsMatchTruth(const JvmBuffers& b, const std::string& truth_file) {
  std::map<std::string, uint64_t> t = ReadTruth(truth_file);
  ASSERT_TRUE(t.count("pool.direct.count") && t.count("pool.mapped.count")) << truth_file;
  EXPECT_EQ(b.direct.count, t["pool.direct.count"]);
  EXPECT_EQ(b.direct.total_capacity, t["pool.direct.capacity"]);
  EXPECT_EQ(b.direct.memory_used, t["pool.direct.used"]);
  EXPECT_EQ(b.mapped.count, t["pool.mapped.count"]);
  EXPECT_EQ(b.mapped.total_capacity, t["pool.mapped.capacity"]);
  EXPECT_EQ(b.mapped.memory_used, t["pool.mapped.used"]);
}

TEST(JvmBuffersParseTest, RecordedJdk17CountsTheCacheInTheDirectPool) {
  Result<JvmBuffers> b = ParseJvmBuffers(test::ReadFixture("agent/jvm_buffers_jdk17.txt"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectPoolsMatchTruth(*b, "jvm_buffers_jdk17.truth");
  // 3 direct buffers of 100000 bytes + 4 cached temporary ones of 3000000.
  EXPECT_EQ(b->direct.count, 7u);
  EXPECT_EQ(b->direct.total_capacity, 3u * 100000u + 4u * 3000000u);
  EXPECT_EQ(b->mapped.count, 1u);
  EXPECT_EQ(b->mapped.total_capacity, 1048576u);
  EXPECT_EQ(b->temp_cache_bytes, 4u * 3000000u);
  EXPECT_EQ(b->temp_cache_buffers, 4u);
}

TEST(JvmBuffersParseTest, RecordedJdk25KeepsTheCacheOutOfTheDirectPool) {
  Result<JvmBuffers> b = ParseJvmBuffers(test::ReadFixture("agent/jvm_buffers_jdk25.txt"));
  ASSERT_TRUE(b.ok()) << b.status().message();
  ExpectPoolsMatchTruth(*b, "jvm_buffers_jdk25.truth");
  EXPECT_EQ(b->direct.count, 3u);
  EXPECT_EQ(b->direct.total_capacity, 300000u);
  // The 4 reads are cached all the same (and one 8 KiB buffer of a JDK read).
  EXPECT_EQ(b->temp_cache_bytes, 4u * 3000000u + 8192u);
  EXPECT_EQ(b->temp_cache_buffers, 5u);
}

TEST(JvmBuffersParseTest, CacheIsOptionalButComesWhole) {
  const std::string pools =
      "direct_count=1\ndirect_capacity=2\ndirect_used=3\nmapped_count=4\nmapped_capacity=5\n"
      "mapped_used=6\n";
  Result<JvmBuffers> b = ParseJvmBuffers(pools);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->direct.memory_used, 3u);
  EXPECT_EQ(b->mapped.memory_used, 6u);
  EXPECT_FALSE(b->temp_cache_bytes.has_value());
  EXPECT_FALSE(b->temp_cache_buffers.has_value());
  EXPECT_FALSE(ParseJvmBuffers(pools + "temp_cache_bytes=10\n").ok());
  EXPECT_FALSE(ParseJvmBuffers(pools + "temp_cache_buffers=1\n").ok());
}

TEST(JvmBuffersParseTest, UnknownKeysAreIgnored) {
  Result<JvmBuffers> b = ParseJvmBuffers(
      "mapped_nvm_count=9\ndirect_count=1\ndirect_capacity=2\ndirect_used=3\nmapped_count=4\n"
      "mapped_capacity=5\nmapped_used=6\ntemp_cache_bytes=7\ntemp_cache_buffers=1\nnew=x\n");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(b->temp_cache_bytes, 7u);
}

TEST(JvmBuffersParseTest, RefusesBrokenBodies) {
  const std::string good = test::ReadFixture("agent/jvm_buffers_jdk17.txt");
  EXPECT_FALSE(ParseJvmBuffers("").ok());
  EXPECT_FALSE(ParseJvmBuffers(good.substr(0, good.size() - 1)).ok());  // cut short
  EXPECT_FALSE(ParseJvmBuffers(good + "direct_count=1\n").ok());        // repeated
  EXPECT_FALSE(ParseJvmBuffers(good + "garbage\n").ok());               // no '='
  EXPECT_FALSE(ParseJvmBuffers("direct_count=x\n" + good.substr(good.find('\n') + 1)).ok());
  EXPECT_FALSE(ParseJvmBuffers("direct_count=-1\n" + good.substr(good.find('\n') + 1)).ok());
  // Each required key missing in turn.
  for (const char* key : {"direct_count", "direct_capacity", "direct_used", "mapped_count",
                          "mapped_capacity", "mapped_used"}) {
    std::string body = good;
    std::size_t at = body.find(std::string(key) + "=");
    ASSERT_NE(at, std::string::npos);
    body.erase(at, body.find('\n', at) - at + 1);
    EXPECT_FALSE(ParseJvmBuffers(body).ok()) << key;
  }
}

}  // namespace
}  // namespace memtrimd::agent
