// The sampled allocation sites of the one target of a memtrimd's /report
// JSON, for the tests of --collector.sites.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/harness.h"
#include "tests/integration/json_value.h"

namespace memtrimd::testing {

struct ServedSite {
  std::string name;
  double live = 0;                 // bytes
  std::optional<double> resident;  // bytes; absent when not known
  bool nmt_tracked = false;
};

// What the agent says of its walks of Java frames (protocol 7 and later).
struct ServedJavaFrames {
  bool on = false;             // the agent walks Java frames
  uint64_t walks = 0;          // sampled stacks it walked
  uint64_t walks_without = 0;  // of those, with no Java frame
};

// A file that stands for its functions in the sites' names, and why.
struct ServedUnnamedFile {
  std::string file;
  double live = 0;  // bytes of the sites that show it
  std::string why;
};

struct ServedSites {
  bool on = false;               // the target has sites (maybe none yet)
  double read_seconds = 0;       // when memtrimd read them from the agent
  std::vector<ServedSite> rows;  // largest first
  std::string missing;           // sites_missing: why there are none
  std::string resident_missing;  // why no site has a resident figure
  // Absent when the agent says nothing of Java frames (before version 7).
  std::optional<ServedJavaFrames> java_frames;
  std::vector<ServedUnnamedFile> unnamed_files;
};

inline ServedSites ReadServedSites(const Memtrimd& m) {
  ServedSites out;
  HttpResponse r = Curl(m.url("/report?format=json"));
  if (r.status != 200) return out;
  std::optional<JsonValue> doc = ParseJson(r.body);
  if (!doc) return out;
  const JsonValue* targets = doc->Get("targets");
  if (targets == nullptr || targets->items.empty()) return out;
  const JsonValue& t = targets->items[0];
  if (const JsonValue* why = t.Get("sites_missing")) out.missing = why->text;
  const JsonValue* sites = t.Path({"sites", "sites"});
  if (sites == nullptr) return out;
  out.on = true;
  if (const JsonValue* at = t.Path({"sites", "read_seconds"})) out.read_seconds = at->Number();
  if (const JsonValue* why = t.Path({"sites", "resident_missing"}))
    out.resident_missing = why->text;
  if (const JsonValue* j = t.Path({"sites", "java_frames"})) {
    ServedJavaFrames java;
    if (const JsonValue* on = j->Get("on")) java.on = on->boolean;
    if (const JsonValue* w = j->Get("walks")) java.walks = static_cast<uint64_t>(w->Number());
    if (const JsonValue* e = j->Get("walks_without_java"))
      java.walks_without = static_cast<uint64_t>(e->Number());
    out.java_frames = java;
  }
  if (const JsonValue* files = t.Path({"sites", "unnamed_files"})) {
    for (const JsonValue& f : files->items) {
      ServedUnnamedFile u;
      if (const JsonValue* n = f.Get("file")) u.file = n->text;
      if (const JsonValue* l = f.Get("live_bytes")) u.live = l->Number();
      if (const JsonValue* w = f.Get("why")) u.why = w->text;
      out.unnamed_files.push_back(std::move(u));
    }
  }
  for (const JsonValue& s : sites->items) {
    ServedSite row;
    if (const JsonValue* n = s.Get("site")) row.name = n->text;
    if (const JsonValue* l = s.Get("live_bytes")) row.live = l->Number();
    if (const JsonValue* held = s.Get("resident_bytes")) row.resident = held->Number();
    if (const JsonValue* t2 = s.Get("nmt_tracked")) row.nmt_tracked = t2->boolean;
    out.rows.push_back(std::move(row));
  }
  return out;
}

}  // namespace memtrimd::testing
