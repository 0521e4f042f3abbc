// A target's hsperfdata file, opened and read as the target's own: memtrimd
// runs as root beside every workload, and a path a user controls must not
// lead it to a file that user could not read (another user's 0600 file).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "collectors/common/status.h"
#include "collectors/common/target.h"
#include "collectors/jvm/hsperfdata.h"

namespace memtrimd::jvm {

// The largest file accepted: HotSpot's PerfDataMemorySize is at most
// 2 MiB (its range is 128 bytes to 2 MiB; default 64 KiB, files of 32 KiB
// with 9 to 14 KiB used in practice), so any file a real JVM made fits.
constexpr std::size_t kMaxPerfFileBytes = 2u << 20;

// The file a JVM maps, when it is known (PerfDataMapping): the file opened
// must be that one.
struct PerfFileIdentity {
  unsigned dev_major = 0;
  unsigned dev_minor = 0;
  uint64_t inode = 0;
};

// Opens `path` (absolute, as the target sees it: "/tmp/hsperfdata_<user>/
// <nspid>") inside the target's root, one component at a time with
// O_NOFOLLOW from /proc/<pid>/root, so no symlink anywhere in the path is
// followed. After opening: the directory holding the file and the file
// belong to the target's effective uid (HotSpot makes both as the JVM's
// euid, 0700 and 0600), the file is regular, not on FUSE, within
// kMaxPerfFileBytes, and the one `expect` names when given. Then reads the
// prologue's `used` bytes and parses them (ParsePerfData). Called on every
// read: nothing checked once is trusted later.
//
// Memory: reads are serialised process-wide (at most one buffer of up to
// kMaxPerfFileBytes at a time, freed before returning); a reader that waits
// longer than a second for its turn gives up its sample.
Result<PerfData> ReadTargetPerfFile(const Target& t, std::string_view path,
                                    const PerfFileIdentity* expect = nullptr);

// The name of the directory under the target's /tmp that holds a perf data
// file for `t.nspid` owned by t.uid ("hsperfdata_<user>"), looked up
// without following symlinks; kNotFound when none.
Result<std::string> FindPerfFileDir(const Target& t);

}  // namespace memtrimd::jvm
