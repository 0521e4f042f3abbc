#include "daemon/report/site_report.h"

#include <cstdio>
#include <vector>

#include "collectors/common/text.h"
#include "daemon/analysis/site_share.h"
#include "daemon/analysis/top_sites.h"
#include "daemon/base/units.h"
#include "daemon/report/pprof_profile.h"

namespace memtrimd::report {

namespace {

std::string Bytes(uint64_t b) { return FormatBytes(static_cast<double>(b)); }

int64_t I(uint64_t v) { return static_cast<int64_t>(v); }

HeapValues ValuesOf(const agent::SiteValues& v) {
  HeapValues h;
  h.alloc_objects = I(v.alloc_objects);
  h.alloc_space = I(v.alloc_bytes);
  h.inuse_objects = I(v.live_objects);
  h.inuse_space = I(v.live_bytes);
  h.resident_space = I(v.resident_bytes);
  return h;
}

std::string Line(const std::string& bytes, const std::string& resident, const std::string& samples,
                 const std::string& name) {
  char buf[128];
  std::snprintf(buf, sizeof(buf), "  %12s %12s %9s  ", bytes.c_str(), resident.c_str(),
                samples.c_str());
  return buf + name + "\n";
}

// A target's file name on one line of text: a control byte (maps escapes
// only '\n', which memtrimd decodes) in the kernel's octal form.
std::string OneLine(std::string_view name) {
  std::string out;
  for (char c : name) {
    const auto b = static_cast<unsigned char>(c);
    if (b < 0x20 || b == 0x7f) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\%03o", b);
      out += esc;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string UnnamedFileText(const agent::UnnamedFile& f) {
  const std::size_t slash = f.path.rfind('/');
  const std::string base = slash == std::string::npos ? f.path : f.path.substr(slash + 1);
  return "no function names in " + OneLine(f.path) + " (shown as " + OneLine(base) +
         " in sites holding " + Bytes(f.live_bytes) + "): " + OneLine(f.why);
}

std::string NotSampledText(const agent::SiteProfile& p) {
  if (!p.hooks_counted && p.linked_allocator.empty()) return "";
  if (p.hooks_counted && p.hooked_entries == 0) {
    return "not sampled: no allocation call of this program could be hooked (an allocator "
           "linked in statically, or every call bound to another malloc), so its sites read "
           "0 B whatever it allocates";
  }
  if (!p.linked_allocator.empty()) {
    return "not sampled: the executable's own allocations (" + p.linked_allocator +
           ": its calls never pass through a GOT entry the hooks could take)";
  }
  if (p.unhooked_objects == 0) return "";
  return "not sampled: the allocations of " + std::to_string(p.unhooked_objects) +
         (p.unhooked_objects == 1 ? " loaded object" : " loaded objects") +
         " whose calls pass by the hooks (bound to another malloc, as under RTLD_DEEPBIND, or "
         "an allocator linked in statically): the sites below miss them";
}

std::string SitesText(const agent::SiteProfile& p, std::size_t top,
                      std::chrono::system_clock::time_point now) {
  // Whole seconds: the agent's clock and this one are read moments apart.
  const auto age = std::chrono::duration_cast<std::chrono::seconds>(now - p.started_at);
  std::string out = "Allocation sites (sampled every " + Bytes(p.period) +
                    " allocated on average, since " +
                    FormatDuration(std::chrono::seconds(age.count() > 0 ? age.count() : 0)) +
                    " ago; allocations before that are not seen)\n";
  if (p.raised > 0) {
    out += "  the sample budget (" + std::to_string(p.max_rate) +
           " a second) raised the period from " + Bytes(p.base_period) + " " +
           std::to_string(p.raised) +
           " times: fewer samples, so each estimate is rougher (its error grows as the "
           "square root of the period)\n";
  }
  if (std::string unseen = NotSampledText(p); !unseen.empty()) out += "  " + unseen + "\n";
  // "-" where the resident figure is not known (said below), never 0.
  const bool known = p.resident.known;
  auto resident = [&](uint64_t b) { return known ? Bytes(b) : std::string("-"); };
  out += Line("live", "resident", "samples", "site (innermost function first)");
  uint64_t resident_shown = 0;
  const uint64_t rest =
      ForTopSites(p, top, EmptySites::kStop, [&](std::size_t, const agent::NamedSite& s) {
        out += Line(Bytes(s.values.live_bytes), resident(s.values.resident_bytes),
                    std::to_string(s.values.live_samples), s.name);
        resident_shown += s.values.resident_bytes;
      });
  const uint64_t all = p.total.resident_bytes;
  out += Line(Bytes(rest), resident(all > resident_shown ? all - resident_shown : 0), "",
              "other sites");
  out += Line(Bytes(p.total.live_bytes), resident(all), std::to_string(p.total.live_samples),
              "in all");
  if (!known) {
    out += "  resident bytes not known: " + p.resident.why + "\n";
  } else {
    out +=
        "  resident: of each live sampled allocation's range, the bytes on resident pages "
        "(pagemap), weighted as its bytes are; in all \u00b1 " +
        Bytes(TwoStandardErrors(p.total.resident_variance)) + " (two standard errors)";
    if (p.resident.scaled) {
      out += "; read for " + std::to_string(p.resident.read) + " of " +
             std::to_string(p.resident.samples) + " live samples (the pass's bound) and scaled";
    }
    out += "\n";
  }
  for (const agent::UnnamedFile& f : p.unnamed_files) out += "  " + UnnamedFileText(f) + "\n";
  out += "  allocated since sampling started: " + Bytes(p.total.alloc_bytes) + " in " +
         std::to_string(p.samples) +
         " samples; the sampler's own tables: " + Bytes(p.sampler_bytes) + "\n";
  if (p.dropped_live > 0 || p.dropped_stacks > 0) {
    out += "  not counted: " + std::to_string(p.dropped_live) +
           " samples the agent's live table had no room for; " + std::to_string(p.dropped_stacks) +
           " went to its \"stack table full\" row\n";
  }
  if (p.java_counted && p.java_frames) {
    out += "  Java frames: walked above " + std::to_string(p.java_walks - p.java_walks_empty) +
           " of " + std::to_string(p.java_walks) +
           " samples taken on Java threads (the rest were in no Java code the walk could "
           "start from); " +
           std::to_string(p.java_ids) + " method ids made for the walk\n";
  }
  if (p.budget_cut_stacks > 0) {
    out += "  not kept: " + std::to_string(p.budget_cut_stacks) +
           " of the largest stacks, over the node's sites memory budget "
           "(--sites.memory-budget; counted in \"other sites\")\n";
  }
  return text::ToValidUtf8(out);
}

std::string SitesBudgetText(const agent::SitesBudgetState& b) {
  std::string out = "sites memory: " + Bytes(b.held_bytes) + " held of the " +
                    Bytes(b.limit_bytes) + " budget (--sites.memory-budget)";
  if (b.dropped_targets > 0 || b.dropped_stacks > 0) {
    out += "; not kept so far: " + std::to_string(b.dropped_stacks) + " stacks, and " +
           std::to_string(b.dropped_targets) + " reads not at all (memtrimd_sites_dropped_total)";
  }
  return out;
}

std::string SamplerText(const agent::SamplerState& s) {
  if (!s.on) return "Allocation sampler: off (no cost to the program)";
  std::string out =
      "Allocation sampler: on, one sample every " + Bytes(s.period) + " allocated on average";
  if (s.lease_until) {
    out += "; it turns itself off at " + ClockUtc(UnixMs(*s.lease_until)) +
           " UTC unless a memtrimd with --collector.sites reads it again";
  }
  return out;
}

void SitesBudgetJson(JsonWriter& w, const agent::SitesBudgetState& b) {
  w.BeginObject();
  w.Key("limit_bytes").Uint(b.limit_bytes).Key("held_bytes").Uint(b.held_bytes);
  w.Key("targets").Uint(b.targets);
  w.Key("dropped_targets").Uint(b.dropped_targets).Key("dropped_stacks").Uint(b.dropped_stacks);
  w.EndObject();
}

void SamplerJson(JsonWriter& w, const agent::SamplerState& s) {
  w.Key("sampler").BeginObject();
  w.Key("on").Bool(s.on).Key("period_bytes").Uint(s.period);
  if (s.lease_until) w.Key("lease_until_seconds").Double(UnixSeconds(*s.lease_until));
  w.EndObject();
}

void SitesJson(JsonWriter& w, const agent::SiteProfile& p, std::size_t top) {
  w.BeginObject();
  w.Key("period_bytes").Uint(p.period);
  w.Key("base_period_bytes").Uint(p.base_period);
  w.Key("max_rate").Uint(p.max_rate).Key("period_raised").Uint(p.raised);
  w.Key("started_seconds").Double(UnixSeconds(p.started_at));
  w.Key("read_seconds").Double(UnixSeconds(p.read_at));
  w.Key("samples").Uint(p.samples);
  w.Key("live_bytes").Uint(p.total.live_bytes).Key("live_objects").Uint(p.total.live_objects);
  w.Key("live_samples").Uint(p.total.live_samples);
  // Absent, with the reason, when not known: never a 0 that reads as "none".
  if (p.resident.known) {
    w.Key("resident_bytes").Uint(p.total.resident_bytes);
    w.Key("resident_error_bytes").Uint(TwoStandardErrors(p.total.resident_variance));
  } else {
    w.Key("resident_missing").String(p.resident.why);
  }
  w.Key("resident_pass").BeginObject();
  w.Key("samples").Uint(p.resident.samples).Key("listed").Uint(p.resident.listed);
  w.Key("read").Uint(p.resident.read).Key("pages_read").Uint(p.resident.pages_read);
  w.Key("scaled").Bool(p.resident.scaled).Key("seconds").Double(p.resident.seconds);
  w.EndObject();
  w.Key("allocated_bytes").Uint(p.total.alloc_bytes);
  w.Key("dropped_live").Uint(p.dropped_live).Key("dropped_stacks").Uint(p.dropped_stacks);
  w.Key("sampler_bytes").Uint(p.sampler_bytes);
  w.Key("budget_cut_stacks").Uint(p.budget_cut_stacks);
  if (p.java_counted) {
    w.Key("java_frames").BeginObject();
    w.Key("on").Bool(p.java_frames).Key("method_ids").Uint(p.java_ids);
    w.Key("walks").Uint(p.java_walks).Key("walks_without_java").Uint(p.java_walks_empty);
    w.EndObject();
  }
  if (p.hooks_counted) {
    w.Key("hooked_entries").Uint(p.hooked_entries);
    w.Key("unhooked_objects").Uint(p.unhooked_objects);
    w.Key("not_sampled").String(NotSampledText(p));
  }
  w.Key("unnamed_files").BeginArray();
  for (const agent::UnnamedFile& f : p.unnamed_files) {
    w.BeginObject().Key("file").String(f.path).Key("live_bytes").Uint(f.live_bytes);
    w.Key("why").String(f.why).Key("text").String(UnnamedFileText(f)).EndObject();
  }
  w.EndArray();
  w.Key("sites").BeginArray();
  for (std::size_t i = 0; i < p.sites.size() && i < top; ++i) {
    const agent::NamedSite& s = p.sites[i];
    w.BeginObject().Key("site").String(s.name);
    w.Key("live_bytes").Uint(s.values.live_bytes).Key("live_objects").Uint(s.values.live_objects);
    w.Key("live_samples").Uint(s.values.live_samples);
    if (p.resident.known) {
      w.Key("resident_bytes").Uint(s.values.resident_bytes);
      w.Key("resident_error_bytes").Uint(TwoStandardErrors(s.values.resident_variance));
    }
    w.Key("allocated_bytes").Uint(s.values.alloc_bytes);
    w.Key("stacks").Uint(s.stacks);
    w.Key("nmt_tracked").Bool(s.nmt_tracked).EndObject();
  }
  w.EndArray();
  w.EndObject();
}

std::optional<std::string> SitesPprof(const agent::SiteProfile& p) {
  std::vector<SiteSample> samples;
  samples.reserve(p.stacks.size() + 1);
  for (const agent::SiteStack& s : p.stacks)
    samples.push_back(SiteSample{s.addresses, ValuesOf(s.values)});
  const int64_t at =
      std::chrono::duration_cast<std::chrono::nanoseconds>(p.read_at.time_since_epoch()).count();
  HeapProfile profile = HeapProfileOf(samples, p.symbols, p.addresses, I(p.period), at);
  profile.has_resident = p.resident.known;
  if (p.other.alloc_samples > 0 || p.other.live_samples > 0) {
    // Stacks beyond --sites.max-stacks and the agent's "stack table full"
    // row: one location, so the profile's totals are the sampler's.
    profile.locations.push_back(PprofLocation{0, 0, "[other stacks]", "", "", 0});
    PprofSample other;
    other.locations.push_back(profile.locations.size());
    other.values = ValuesOf(p.other);
    profile.samples.push_back(std::move(other));
  }
  return GzipProfile(profile);
}

}  // namespace memtrimd::report
