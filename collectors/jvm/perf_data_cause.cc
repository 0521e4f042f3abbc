#include "collectors/jvm/perf_data_cause.h"

namespace memtrimd::jvm {
namespace {

std::optional<uint32_t> ParseUid(std::string_view s) {
  if (s.empty() || s.size() > 10) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  if (v > UINT32_MAX) return std::nullopt;
  return static_cast<uint32_t>(v);
}

}  // namespace

std::optional<std::string> PasswdNameOf(std::string_view passwd, uint32_t uid, bool* complete) {
  if (complete != nullptr) *complete = true;
  std::optional<std::string> found;
  while (!passwd.empty()) {
    std::size_t nl = passwd.find('\n');
    std::string_view line = passwd.substr(0, nl);
    passwd.remove_prefix(nl == std::string_view::npos ? passwd.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty() && (line.front() == '+' || line.front() == '-')) {
      if (complete != nullptr) *complete = false;
      continue;
    }
    std::size_t c1 = line.find(':');
    if (c1 == std::string_view::npos || c1 == 0) continue;
    std::size_t c2 = line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    std::size_t c3 = line.find(':', c2 + 1);
    std::string_view uid_field =
        line.substr(c2 + 1, c3 == std::string_view::npos ? std::string_view::npos : c3 - c2 - 1);
    std::optional<uint32_t> line_uid = ParseUid(uid_field);
    if (!found && line_uid && *line_uid == uid) found = std::string(line.substr(0, c1));
  }
  return found;
}

PerfDataVerdict DecidePerfDataCause(const PerfDataCauseFacts& f) {
  bool perf_off = false, shared_off = false;
  std::string perf_off_by, shared_off_by;
  if (f.options_known) {
    for (const JvmOption& o : f.options) {
      if (o.text == "-XX:-UsePerfData") {
        perf_off = true;
        perf_off_by = o.origin;
      } else if (o.text == "-XX:+UsePerfData") {
        perf_off = false;
      } else if (o.text == "-XX:+PerfDisableSharedMem") {
        shared_off = true;
        shared_off_by = o.origin;
      } else if (o.text == "-XX:-PerfDisableSharedMem") {
        shared_off = false;
      }
    }
  }
  if (perf_off) return {PerfDataCause::kPerfDataOff, perf_off_by};
  if (shared_off) return {PerfDataCause::kSharedMemOff, shared_off_by};
  if (f.uid_named == false) return {PerfDataCause::kUidWithoutName, ""};
  return {PerfDataCause::kUnknown, ""};
}

std::string PerfDataCauseText(const PerfDataVerdict& v, const PerfDataCauseFacts& f) {
  const std::string uid = std::to_string(f.uid);
  const std::string seen = v.where.empty() ? "" : " (seen in " + v.where + ")";
  switch (v.cause) {
    case PerfDataCause::kPerfDataOff:
      return "the JVM runs with -XX:-UsePerfData" + seen +
             ": it keeps no perf counters at all; start it without that flag";
    case PerfDataCause::kSharedMemOff:
      return "the JVM runs with -XX:+PerfDisableSharedMem" + seen +
             ": it keeps its perf counters in its own memory, in no file; start it without "
             "that flag";
    case PerfDataCause::kUidWithoutName:
      return "the JVM's uid " + uid +
             " has no user name in its /etc/passwd, and HotSpot makes no "
             "hsperfdata_<user>/<pid> file for a uid without a name (runAsUser with an "
             "arbitrary uid in a pod); give uid " +
             uid + " a passwd entry in the app's image, or run the JVM as a named user";
    case PerfDataCause::kUnknown:
      break;
  }
  std::string known;
  if (!f.options_known) {
    known = "its options could not all be read";
  } else {
    known = "its options set neither -XX:-UsePerfData nor -XX:+PerfDisableSharedMem";
  }
  known += f.uid_named == true        ? ", and uid " + uid + " has a user name"
           : !f.uid_named.has_value() ? ", and whether uid " + uid +
                                            " has a user name is unknown (its /etc/passwd could "
                                            "not be read, or names users elsewhere)"
                                      : "";
  return "the JVM has no hsperfdata file (" + known + "); its /tmp may not be writable by its user";
}

}  // namespace memtrimd::jvm
