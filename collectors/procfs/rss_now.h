// The target's RSS at this moment, read right after a slower read of it
// (smaps, NMT, malloc statistics): the RSS account combines reads taken at
// different moments, and compares these figures to tell whether they are
// of one moment (daemon/analysis/account_moment.h).
#pragma once

#include <cstdint>
#include <string>

namespace memtrimd::procfs {

// ProcStatus::Rss() from <proc_dir>/status (which needs no mmap lock); 0 when
// it cannot be read, which callers take as "not known".
uint64_t RssNow(const std::string& proc_dir);

}  // namespace memtrimd::procfs
