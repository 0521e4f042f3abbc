#include "daemon/report/section_direct_callers.h"

#include <cstddef>
#include <vector>

#include "daemon/analysis/direct_callers.h"
#include "daemon/base/units.h"
#include "daemon/report/svg_chart.h"

namespace memtrimd::report {
namespace {

// Callers listed of each kind: the page says who, in a few lines.
constexpr std::size_t kCallersOfEachKind = 5;

}  // namespace

void DirectCallersHtml(std::string& out, const TargetSample& s) {
  if (!s.sites || !(s.jvm || s.jvm_perf)) return;
  const agent::SiteProfile& p = *s.sites;
  const std::vector<DirectCaller> callers = DirectCallersOf(p);
  out += "<h3>Who holds the direct memory</h3>\n";
  if (callers.empty()) {
    out +=
        "<p class=\"direct-callers\" data-callers=\"0\">No sampled stack holds direct memory "
        "through a Java caller" +
        std::string(p.java_counted && !p.java_frames
                        ? ": the agent walks no Java frames (--no-sites.java-frames, or "
                          "MEMTRIMD_AGENT_JAVA_FRAMES=0 in the JVM)."
                        : ".") +
        "</p>\n";
    return;
  }
  out += "<table class=\"direct-callers\" data-callers=\"" + std::to_string(callers.size()) +
         "\"><tr><th>Java caller</th><th>live</th><th class=\"l\">held as</th></tr>\n";
  std::size_t shown[2] = {0, 0};
  for (const DirectCaller& c : callers) {
    std::size_t& n = shown[c.kind == DirectKind::kTemporaryCache ? 0 : 1];
    if (n++ >= kCallersOfEachKind) continue;
    out += "<tr data-kind=\"" + std::string(DirectKindKey(c.kind)) + "\" data-method=\"" +
           HtmlEscape(c.method) + "\" data-live-bytes=\"" + std::to_string(c.live_bytes) +
           "\"><td class=\"l\">" + HtmlEscape(c.method) + "</td><td>" + FormatMib(c.live_bytes) +
           "</td><td class=\"l\">" +
           (c.kind == DirectKind::kTemporaryCache ? "temporary buffer cache"
                                                  : "direct buffers, Unsafe, FFM") +
           "</td></tr>\n";
  }
  out +=
      "</table>\n<p class=\"note\">From the sampled allocation stacks (estimates) through "
      "DirectByteBuffer.&lt;init&gt; or Unsafe.allocateMemory, in NMT Other, each by its "
      "first Java method outside the JDK. The temporary buffer cache is what a thread's "
      "channel reads and writes through heap buffers leave in its cache "
      "(sun.nio.ch.Util.getTemporaryDirectBuffer), a buffer as large as its largest I/O, "
      "kept while the thread lives (none larger than -Djdk.nio.maxCachedBufferSize). "
      "Allocations from "
      "before sampling started are not seen.</p>\n";
}

}  // namespace memtrimd::report
