#include "collectors/agent/client/site_profile.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "collectors/common/text.h"

namespace memtrimd::agent {

namespace {

std::string FrameName(const symbols::Frame& f, const symbols::Symbolization& s) {
  switch (f.kind) {
    case symbols::FrameKind::kFunction:
      return std::string(f.short_name);  // a label: no parameter list
    case symbols::FrameKind::kAnon:
      return "[java]";
    case symbols::FrameKind::kJava:
      return std::string(f.short_name);
    case symbols::FrameKind::kUnknown:
      break;
  }
  if (f.file >= 0 && static_cast<std::size_t>(f.file) < s.files.size()) {
    const std::string& path = s.files[f.file].path;
    std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  }
  return "[unknown]";
}

// Frames kept of one stack (twice what the agent walks).
constexpr std::size_t kMaxKeptFrames = 64;

// Longest name served as a label value: C++ names can run to kilobytes.
constexpr std::size_t kMaxNameBytes = 240;

bool Larger(const SiteValues& a, const SiteValues& b) {
  if (a.live_bytes != b.live_bytes) return a.live_bytes > b.live_bytes;
  return a.alloc_bytes > b.alloc_bytes;
}

std::string_view BaseName(std::string_view path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// glibc's malloc wrappers and the dynamic linker's own allocations (TLS,
// dlopen) sit between a caller and malloc without being its reason: the
// caller is the frame after them. Older glibc names its files libc-2.NN.so
// and ld-2.NN.so.
bool IsLibcOrLoader(std::string_view file) {
  return file.starts_with("libc.so") || file.starts_with("libc-2.") ||
         file.starts_with("ld-linux") || file.starts_with("ld-2.");
}

}  // namespace

// profile.addresses is sorted.
const symbols::Frame* FrameOf(uint64_t a, const SiteProfile& profile) {
  auto it = std::lower_bound(profile.addresses.begin(), profile.addresses.end(), a);
  if (it == profile.addresses.end() || *it != a) return nullptr;
  const std::size_t i = static_cast<std::size_t>(it - profile.addresses.begin());
  return i < profile.symbols.frames.size() ? &profile.symbols.frames[i] : nullptr;
}

bool NmtTrackedStack(std::span<const uint64_t> addresses, const SiteProfile& profile) {
  for (uint64_t a : addresses) {
    const symbols::Frame* f = FrameOf(a, profile);
    if (f == nullptr || f->file < 0 ||
        static_cast<std::size_t>(f->file) >= profile.symbols.files.size()) {
      return false;  // no file: anonymous (JIT) code or unknown, not libjvm
    }
    std::string_view file = BaseName(profile.symbols.files[f->file].path);
    if (IsLibcOrLoader(file)) continue;
    return file == "libjvm.so";
  }
  return false;
}

const symbols::Frame* NamingJavaFrame(std::span<const uint64_t> addresses,
                                      const SiteProfile& profile) {
  const symbols::Frame* innermost = nullptr;
  for (uint64_t a : addresses) {
    if (!symbols::IsJavaFrame(a)) continue;
    const symbols::Frame* f = FrameOf(a, profile);
    if (f == nullptr) continue;
    if (!symbols::IsJdkJavaName(f->short_name)) return f;
    if (innermost == nullptr) innermost = f;
  }
  return innermost;
}

std::string SiteName(std::span<const uint64_t> addresses, const SiteProfile& profile,
                     std::vector<const symbols::Frame*>* named) {
  auto shown = [&](const symbols::Frame* f) {
    if (named != nullptr && f != nullptr) named->push_back(f);
  };
  if (const symbols::Frame* java = NamingJavaFrame(addresses, profile)) {
    std::string name;
    if (!addresses.empty() && !symbols::IsJavaFrame(addresses[0])) {
      const symbols::Frame* f = FrameOf(addresses[0], profile);
      shown(f);
      name = (f != nullptr ? FrameName(*f, profile.symbols) : std::string("[unknown]")) + " < ";
    }
    shown(java);
    name += FrameName(*java, profile.symbols);
    if (name.size() > kMaxNameBytes) name = name.substr(0, kMaxNameBytes) + "...";
    return text::ToValidUtf8(name);
  }
  std::string name;
  std::string last;
  std::size_t parts = 0;
  for (uint64_t a : addresses) {
    if (parts == kSiteNameFrames) break;
    auto it = std::lower_bound(profile.addresses.begin(), profile.addresses.end(), a);
    std::string part = "[unknown]";
    const symbols::Frame* frame = nullptr;
    if (it != profile.addresses.end() && *it == a) {
      frame = &profile.symbols.frames[it - profile.addresses.begin()];
      part = FrameName(*frame, profile.symbols);
    }
    if (part == last) continue;  // recursion: one name
    shown(frame);
    if (!name.empty()) name += " < ";
    name += part;
    last = std::move(part);
    ++parts;
  }
  if (name.empty()) name = "[no stack]";
  if (name.size() > kMaxNameBytes) name = name.substr(0, kMaxNameBytes) + "...";
  return text::ToValidUtf8(name);
}

std::size_t SiteProfile::MemoryBytes() const {
  std::size_t n = sizeof(SiteProfile) + stacks.capacity() * sizeof(SiteStack) +
                  addresses.capacity() * sizeof(uint64_t) + symbols.MemoryBytes() +
                  sites.capacity() * sizeof(NamedSite) + linked_allocator.capacity();
  for (const SiteStack& s : stacks) n += s.addresses.capacity() * sizeof(uint64_t);
  for (const NamedSite& s : sites) n += s.name.capacity();
  n += unnamed_files.capacity() * sizeof(UnnamedFile);
  for (const UnnamedFile& f : unnamed_files) n += f.path.capacity() + f.why.capacity();
  return n + resident.why.capacity();
}

SiteProfile BuildSiteProfile(const AgentSites& raw, std::span<const procfs::MapsEntry> maps,
                             symbols::ElfSource& source, std::size_t max_stacks,
                             uint64_t monotonic_now_ns, std::chrono::system_clock::time_point now,
                             uint64_t main_code) {
  SiteProfile p;
  p.read_at = now;
  const uint64_t age_ns = monotonic_now_ns > raw.started_ns ? monotonic_now_ns - raw.started_ns : 0;
  p.started_at = now - std::chrono::duration_cast<std::chrono::system_clock::duration>(
                           std::chrono::nanoseconds(age_ns));
  p.period = raw.period;
  p.base_period = raw.base_period;
  p.max_rate = raw.max_rate;
  p.raised = raw.raised;
  p.generation = raw.generation;
  p.samples = raw.samples;
  p.dropped_live = raw.dropped_live;
  p.dropped_stacks = raw.dropped_stacks;
  p.sampler_bytes = raw.sampler_bytes;
  p.hooked_objects = raw.hooked_objects;
  p.hooks_counted = raw.hooks_counted;
  p.hooked_entries = raw.hooked_entries;
  p.unhooked_objects = raw.unhooked_objects;
  p.truncated = raw.truncated;
  p.resident = raw.resident;
  p.java_counted = raw.java_counted;
  p.java_frames = raw.java_frames;
  p.java_ids = raw.java_ids;
  p.java_walks = raw.java_walks;
  p.java_walks_empty = raw.java_walks_empty;

  // Sorted by index: the answer stays as parsed, so that it can be built
  // again with fewer stacks when the sites budget asks for it.
  std::vector<std::size_t> by_size(raw.stacks.size());
  for (std::size_t i = 0; i < by_size.size(); ++i) by_size[i] = i;
  std::stable_sort(by_size.begin(), by_size.end(), [&](std::size_t ia, std::size_t ib) {
    const AgentStack& a = raw.stacks[ia];
    const AgentStack& b = raw.stacks[ib];
    // The agent's "[stack table full]" row (no addresses) is never kept.
    if (a.pcs.empty() != b.pcs.empty()) return b.pcs.empty();
    return Larger(a.values, b.values);
  });
  for (std::size_t i : by_size) {
    const AgentStack& s = raw.stacks[i];
    p.total += s.values;
    if (s.pcs.empty() || p.stacks.size() >= max_stacks) {
      p.other += s.values;
      continue;
    }
    SiteStack kept;
    kept.values = s.values;
    kept.addresses.reserve(s.pcs.size());
    // The agent walks 32 frames; a target that sends more (its answer is
    // its own) gets no more than kMaxKeptFrames kept, so a profile's
    // symbolised frames stay bounded per target.
    for (uint64_t pc : s.pcs) {
      if (kept.addresses.size() == kMaxKeptFrames) break;
      // A Java frame is a word the agent names, not a return address.
      kept.addresses.push_back(symbols::IsJavaFrame(pc) ? pc : (pc > 0 ? pc - 1 : 0));
    }
    p.stacks.push_back(std::move(kept));
  }

  for (const SiteStack& s : p.stacks) {
    p.addresses.insert(p.addresses.end(), s.addresses.begin(), s.addresses.end());
  }
  std::sort(p.addresses.begin(), p.addresses.end());
  p.addresses.erase(std::unique(p.addresses.begin(), p.addresses.end()), p.addresses.end());
  p.symbols = symbols::Symbolize(p.addresses, maps, source, main_code, raw.java);
  // Where Java frames follow, the anonymous frames before them (the JVM's
  // native-method stub, interpreter or JIT code the unwinder stopped in)
  // are what the Java frames name better: left out of the stack.
  for (SiteStack& s : p.stacks) {
    if (std::none_of(s.addresses.begin(), s.addresses.end(), symbols::IsJavaFrame)) continue;
    std::erase_if(s.addresses, [&](uint64_t a) {
      const symbols::Frame* f = FrameOf(a, p);
      return f != nullptr && f->kind == symbols::FrameKind::kAnon;
    });
  }

  std::map<std::string, std::size_t> by_name;
  // Files shown by name in a site's name: path -> index into `unnamed`.
  std::map<std::string, std::size_t> unnamed_index;
  std::vector<UnnamedFile> unnamed;
  std::vector<const symbols::Frame*> named;
  for (SiteStack& s : p.stacks) {
    named.clear();
    std::string name = SiteName(s.addresses, p, &named);
    std::vector<std::size_t> counted;  // this stack's files, counted once
    for (const symbols::Frame* f : named) {
      if (f->kind != symbols::FrameKind::kUnknown || f->file < 0) continue;
      const symbols::MappedFile& file = p.symbols.files[static_cast<std::size_t>(f->file)];
      if (file.names_missing.empty()) continue;
      auto [at, fresh] = unnamed_index.try_emplace(file.path, unnamed.size());
      if (fresh) unnamed.push_back(UnnamedFile{file.path, file.names_missing, 0});
      if (std::find(counted.begin(), counted.end(), at->second) != counted.end()) continue;
      counted.push_back(at->second);
      unnamed[at->second].live_bytes += s.values.live_bytes;
    }
    const bool tracked = NmtTrackedStack(s.addresses, p);
    auto [it, added] = by_name.emplace(name, p.sites.size());
    // A site is NMT's only when all its stacks are: one short name can
    // cover stacks from libjvm and from elsewhere below its named frames.
    if (added) p.sites.push_back(NamedSite{std::move(name), {}, 0, tracked});
    s.site = it->second;
    p.sites[it->second].values += s.values;
    p.sites[it->second].stacks++;
    p.sites[it->second].nmt_tracked = p.sites[it->second].nmt_tracked && tracked;
  }
  // Sorted by size; stacks keep their index through a permutation.
  std::vector<std::size_t> order(p.sites.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (p.sites[a].values.live_bytes != p.sites[b].values.live_bytes) {
      return p.sites[a].values.live_bytes > p.sites[b].values.live_bytes;
    }
    return p.sites[a].name < p.sites[b].name;
  });
  std::vector<std::size_t> rank(order.size());
  std::vector<NamedSite> sorted;
  sorted.reserve(order.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    rank[order[i]] = i;
    sorted.push_back(std::move(p.sites[order[i]]));
  }
  p.sites = std::move(sorted);
  for (SiteStack& s : p.stacks) s.site = rank[s.site];
  std::sort(unnamed.begin(), unnamed.end(), [](const UnnamedFile& a, const UnnamedFile& b) {
    if (a.live_bytes != b.live_bytes) return a.live_bytes > b.live_bytes;
    return a.path < b.path;
  });
  if (unnamed.size() > kMaxUnnamedFiles) unnamed.resize(kMaxUnnamedFiles);
  p.unnamed_files = std::move(unnamed);
  return p;
}

}  // namespace memtrimd::agent
