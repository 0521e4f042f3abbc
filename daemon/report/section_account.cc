#include "daemon/report/section_account.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "daemon/analysis/findings.h"
#include "daemon/analysis/rss_account.h"
#include "daemon/base/units.h"
#include "daemon/report/section_cgroup.h"
#include "daemon/report/svg_chart.h"

namespace memtrimd::report {
namespace {

bool LeftOut(const RssAccount& a, std::string_view what) {
  return std::any_of(a.left_out.begin(), a.left_out.end(),
                     [&](const LeftOutRead& l) { return l.what == what; });
}

// The account's parts with the figures the equation prints for them.
std::vector<BarPart> PartsOf(const RssAccount& a) {
  std::vector<BarPart> parts;
  const std::vector<std::string> shown = AccountPartsShown(a);
  std::size_t i = 0;
  for (const auto& [part, bytes] : AccountParts(a)) {
    std::string label = std::string_view(part) == "allocator_free" ? a.allocator + " free kept"
                                                                   : AccountPartLabel(part);
    parts.push_back({part, label, bytes, shown[i++]});
  }
  return parts;
}

using Clock = std::chrono::system_clock;

// A read made outside the collectors (a test's sample) has no time.
bool Dated(Clock::time_point at) { return at != Clock::time_point{}; }

int64_t AgeSeconds(Clock::time_point at, Clock::time_point now) {
  return std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::seconds>(now - at).count());
}

// "47 s ago", "12m5s ago".
std::string Ago(Clock::time_point at, Clock::time_point now) {
  const int64_t secs = AgeSeconds(at, now);
  if (secs < 120) return std::to_string(secs) + " s ago";
  return FormatDuration(std::chrono::seconds(secs)) + " ago";
}

// "As of the smaps read 47 s ago" (or without the age when it has none).
std::string AsOf(const RssAccount& a, Clock::time_point now) {
  return "As of the smaps read" + (Dated(a.smaps_read.at) ? " " + Ago(a.smaps_read.at, now) : "");
}

// Whether the account must be dated: its smaps read is a second old or
// more, or its reads or the RSS now are not of one moment.
bool NeedsDate(const RssAccount& a, Clock::time_point now) {
  const bool old = Dated(a.smaps_read.at) && AgeSeconds(a.smaps_read.at, now) >= 1;
  return old || !a.left_out.empty() || !a.InStepWithNow();
}

}  // namespace

std::string AccountMomentText(const RssAccount& a, Clock::time_point now) {
  if (!NeedsDate(a, now)) return "";
  std::string out = AsOf(a, now);
  if (Dated(a.smaps_read.at)) out += " (" + ClockUtc(UnixMs(a.smaps_read.at)) + " UTC)";
  if (!a.InStepWithNow()) {
    out += ", when RSS was " + FormatMib(a.smaps_read.rss) + " (" + FormatMib(a.rss_now) +
           " now: the account is not of this moment, and no share of its parts is taken of "
           "figures read now)";
  }
  auto read_ago = [&](const ReadMoment& r) {
    return Dated(r.at) ? " read " + Ago(r.at, now) : std::string();
  };
  if (a.nmt_read) out += "; NMT" + read_ago(*a.nmt_read);
  if (a.malloc_read) out += "; malloc statistics" + read_ago(*a.malloc_read);
  for (const LeftOutRead& l : a.left_out) {
    out += "; " + l.what + read_ago(l.read) + " left out: RSS was " + FormatMib(l.read.rss) +
           " then, " + FormatMib(a.smaps_read.rss) +
           " at the smaps read (more than 10 % apart), so the parts it splits wait until the "
           "two are read in step";
  }
  return out + ".";
}

std::string AccountNotOfNow(const RssAccount& a, Clock::time_point now) {
  if (a.InStepWithNow()) return "";
  return "the account is of the smaps read" +
         (Dated(a.smaps_read.at) ? " " + Ago(a.smaps_read.at, now) : std::string()) +
         ", when RSS was " + FormatMib(a.smaps_read.rss) + ", not of now (" + FormatMib(a.rss_now) +
         "; smaps is read every --smaps.interval)";
}

std::string AccountPartLabel(std::string_view part) {
  if (part == "file") return "file-backed";
  if (part == "java_heap") return "Java heap";
  // NMT's own category name, which inspect's NMT list shows too.
  if (part == "nmt_buffers") return "buffers (NMT Other)";
  if (part == "nmt_metaspace") return "NMT metaspace";
  if (part == "nmt_code") return "NMT code";
  if (part == "nmt_threads") return "NMT threads";
  if (part == "nmt_gc") return "NMT GC";
  if (part == "nmt_jvm_other") return "NMT other JVM";
  if (part == "glibc_free") return "glibc free kept";
  if (part == "outside_nmt") return "native outside NMT";
  return "native";
}

void AccountText(TextTable& t, const TargetSample& s, Clock::time_point now) {
  std::optional<RssAccount> a = AccountRss(s);
  if (!a) return;
  t.Heading(std::string("Who holds the RSS (one smaps read") + (a->nmt ? ", NMT" : "") +
            (a->malloc_read ? ", malloc statistics" : "") + ")");
  if (std::string moment = AccountMomentText(*a, now); !moment.empty()) t.Say(moment);
  t.Row(AccountPartLabel("file"), Bytes(a->file), "code and mapped files: not native memory");
  if (a->java_heap)
    t.Row(AccountPartLabel("java_heap"), Bytes(*a->java_heap), "touched pages of the Java heap");
  if (a->nmt) {
    const NmtKnown& n = *a->nmt;
    t.Row("NMT-known native", Bytes(n.total()), "resident memory the JVM accounts for");
    t.Row("  " + AccountPartLabel("nmt_buffers"), Bytes(n.buffers),
          "direct buffers, temporary buffer cache, FFM, Unsafe");
    t.Row("  metaspace", Bytes(n.metaspace), "class metadata");
    t.Row("  code", Bytes(n.code), "the JIT's code cache");
    t.Row("  threads", Bytes(n.threads), "stacks and thread structures");
    t.Row("  GC", Bytes(n.gc), "card tables, remembered sets, mark bitmaps");
    t.Row("  other JVM", Bytes(n.jvm_other), "symbols, compiler, internal, ...");
  }
  if (a->glibc_free) {
    std::string gives;
    if (auto tr = TrimmableEstimate(s)) {
      gives = "; a trim gives back about " + Bytes(*tr) +
              " of it (the rest is free space beside live blocks in their pages)";
    }
    t.Row(AccountPartLabel("glibc_free"), Bytes(*a->glibc_free),
          "free memory malloc keeps resident" + gives +
              std::string(MallocStatsStale(s) ? " (malloc statistics from before the last trim)"
                                              : ""));
  }
  if (a->allocator_free) {
    t.Row(a->allocator + " free kept", Bytes(*a->allocator_free),
          "free memory " + a->allocator + " keeps; its release call gives it back");
  }
  std::string rest_note =
      a->nmt ? "JNI and native libraries (zlib, TLS, ...), glibc's own structures"
             : (a->is_jvm ? (LeftOut(*a, "NMT") ? "all native memory (NMT left out: not of "
                                                  "this smaps read's moment)"
                                                : "all native memory (no NMT to split it)")
                          : "the program's malloc'd and mapped memory");
  if (!a->glibc_free && !a->allocator_free) {
    rest_note += "; " + a->allocator + "'s free memory is in here (no malloc statistics)";
  }
  if (a->outside_is_estimate && a->nmt) {
    rest_note += "; an estimate (the JVM's malloc'd memory cannot be placed without them)";
  }
  t.Row(AccountPartLabel(a->nmt ? "outside_nmt" : "native"), Bytes(a->outside), rest_note);
  std::string eq = a->Equation();
  if (s.cgroup && s.cgroup->limit_bytes) eq += " (limit " + Bytes(*s.cgroup->limit_bytes) + ")";
  t.Say(eq);
  if (a->nmt_committed_untouched > 0) {
    t.Say("(NMT also counts " + Bytes(a->nmt_committed_untouched) +
          " committed but never touched, e.g. GC bitmaps of an untouched heap: not RSS)");
  }
}

void AccountJson(JsonWriter& w, const TargetSample& s) {
  std::optional<RssAccount> a = AccountRss(s);
  if (!a) return;
  w.Key("rss_account").BeginObject();
  w.Key("rss_bytes").Uint(a->rss).Key("file_bytes").Uint(a->file);
  if (a->java_heap) w.Key("java_heap_bytes").Uint(*a->java_heap);
  if (a->nmt) {
    const NmtKnown& n = *a->nmt;
    w.Key("nmt_known_bytes").Uint(n.total());
    w.Key("nmt_known").BeginObject();
    w.Key("buffers_bytes").Uint(n.buffers).Key("metaspace_bytes").Uint(n.metaspace);
    w.Key("code_bytes").Uint(n.code).Key("threads_bytes").Uint(n.threads);
    w.Key("gc_bytes").Uint(n.gc).Key("jvm_other_bytes").Uint(n.jvm_other);
    w.EndObject();
    w.Key("nmt_committed_untouched_bytes").Uint(a->nmt_committed_untouched);
  }
  if (a->glibc_free) w.Key("glibc_free_bytes").Uint(*a->glibc_free);
  if (a->allocator_free) w.Key("allocator_free_bytes").Uint(*a->allocator_free);
  w.Key(a->nmt ? "outside_nmt_bytes" : "native_bytes").Uint(a->outside);
  if (a->nmt) w.Key("outside_nmt_is_estimate").Bool(a->outside_is_estimate);
  w.Key("equation").String(a->Equation());
  // When each read was taken (Unix seconds) and the target's RSS right
  // after it; whether the reads are of one moment, and the RSS now.
  auto moment = [&](const char* key, const ReadMoment& r) {
    if (Dated(r.at)) w.Key(std::string(key) + "_read_seconds").Double(UnixSeconds(r.at));
    if (r.rss) w.Key(std::string(key) + "_read_rss_bytes").Uint(r.rss);
  };
  moment("smaps", a->smaps_read);
  if (a->nmt_read) moment("nmt", *a->nmt_read);
  if (a->malloc_read) moment("malloc", *a->malloc_read);
  w.Key("parts_in_step").Bool(a->left_out.empty());
  if (!a->left_out.empty()) {
    w.Key("left_out").BeginArray();
    for (const LeftOutRead& l : a->left_out) {
      w.BeginObject().Key("read").String(l.what);
      if (Dated(l.read.at)) w.Key("read_seconds").Double(UnixSeconds(l.read.at));
      w.Key("rss_bytes").Uint(l.read.rss).EndObject();
    }
    w.EndArray();
  }
  if (a->rss_now) w.Key("rss_now_bytes").Uint(a->rss_now);
  w.Key("in_step_with_rss_now").Bool(a->InStepWithNow());
  w.EndObject();
}

void AccountHtml(std::string& out, const TargetSample& s, Clock::time_point now) {
  out += "<h3>Who holds the RSS</h3>\n";
  std::optional<RssAccount> a = AccountRss(s);
  if (!a) {
    out += "<p>No account yet: it needs a smaps read (every --smaps.interval).</p>\n";
    return;
  }
  std::vector<BarPart> parts = PartsOf(*a);
  out += "<div class=\"account\" data-rss=\"" + std::to_string(a->rss) + "\"";
  if (Dated(a->smaps_read.at)) {
    out += " data-smaps-age-seconds=\"" + std::to_string(AgeSeconds(a->smaps_read.at, now)) + "\"";
  }
  out += std::string(" data-parts-in-step=\"") + (a->left_out.empty() ? "1" : "0") +
         "\" data-in-step-with-now=\"" + (a->InStepWithNow() ? "1" : "0") + "\">\n";
  const bool dated = NeedsDate(*a, now);
  if (dated) {
    out += "<p class=\"account-moment\">" + HtmlEscape(AccountMomentText(*a, now)) + "</p>\n";
  }
  out += RenderAccountBar(parts, a->rss, LimitOf(s));
  out += "<div class=\"legend\">";
  for (std::size_t i = 0; i < parts.size(); ++i) {
    out += "<span data-legend-part=\"" + HtmlEscape(parts[i].part) + "\">" + Swatch(PartColor(i)) +
           HtmlEscape(parts[i].label) + " " + HtmlEscape(parts[i].shown) + "</span> ";
  }
  out +=
      "</div>\n<p>" + (dated ? HtmlEscape(AsOf(*a, now)) + ": " : "") + HtmlEscape(a->Equation());
  if (auto limit = LimitOf(s)) out += " (limit " + FormatMib(*limit) + ")";
  out += "</p>\n</div>\n";
}

}  // namespace memtrimd::report
