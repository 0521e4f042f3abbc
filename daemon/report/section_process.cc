#include "daemon/report/section_process.h"

#include <cmath>
#include <string>

#include "collectors/procfs/target_reader.h"
#include "daemon/base/units.h"
#include "daemon/report/collector_note.h"

namespace memtrimd::report {

void TargetHeadingText(TextTable& t, const TargetSnapshot& ts, const AllocatorView& alloc,
                       std::chrono::system_clock::time_point now) {
  const Target& tg = ts.target;
  double up = std::floor(UnixSeconds(now)) - ts.start_time_seconds;
  t.Heading("pid " + std::to_string(tg.pid) + " (" + tg.comm + "), runtime " +
            RuntimeName(tg.runtime) + ", allocator " + AllocatorName(alloc.allocator) +
            ", started " + FormatUtc(ts.start_time_seconds) + " (up " +
            FormatDuration(std::chrono::seconds(static_cast<int64_t>(up > 0 ? up : 0))) + ")");
}

void ProcessText(TextTable& t, const TargetSnapshot& ts, const AllocatorView& alloc) {
  const Target& tg = ts.target;
  const auto& p = ts.sample.process;
  // Once the main thread has ended the figures come from a live thread's
  // status: the heading names the file they were read from.
  const pid_t task = procfs::ReadingTask(tg);
  t.Heading("Resident memory (from /proc/" + std::to_string(tg.pid) +
            (task != tg.pid ? "/task/" + std::to_string(task) : "") + "/status)");
  if (!p) {
    ExplainFailure(t, ts, "process");
    return;
  }
  t.Row("RSS", Bytes(p->Rss()), "what the kernel counts against the process");
  t.Row("  anonymous", Bytes(p->rss_anon), "malloc heaps, stacks, anonymous mmaps");
  t.Row("  file-backed", Bytes(p->rss_file), "code and mapped files; the kernel can drop these");
  t.Row("  shared memory", Bytes(p->rss_shmem), "shmem and tmpfs pages");
  t.Row("swap", Bytes(p->vm_swap));
  t.Row("peak RSS", Bytes(p->vm_hwm), "highest RSS since the process started");
  t.Row(
      "threads", std::to_string(p->threads),
      alloc.allocator == Allocator::kGlibc ? "each thread that mallocs may get its own arena" : "");
}

void ProcessJson(JsonWriter& w, const TargetSample& s) {
  const auto& p = s.process;
  if (!p) return;
  w.Key("process").BeginObject();
  w.Key("rss_bytes").Uint(p->Rss());
  w.Key("rss_anon_bytes").Uint(p->rss_anon).Key("rss_file_bytes").Uint(p->rss_file);
  w.Key("rss_shmem_bytes").Uint(p->rss_shmem).Key("swap_bytes").Uint(p->vm_swap);
  w.Key("rss_peak_bytes").Uint(p->vm_hwm).Key("threads").Uint(p->threads);
  w.EndObject();
}

}  // namespace memtrimd::report
