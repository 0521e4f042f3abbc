#include "tests/integration/jni_site_holder.h"

#include <filesystem>
#include <sstream>
#include <utility>

namespace memtrimd::testing {

JniSiteHolderOutput ParseJniSiteHolderOutput(const std::string& text) {
  JniSiteHolderOutput out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind, name, value, blocks;
    fields >> kind;
    if (kind == "pid" && fields >> value) {
      out.pid = static_cast<pid_t>(std::stol(value));
    } else if (kind == "function" && fields >> name >> value) {
      out.functions[name] = std::stoull(value, nullptr, 16);
    } else if (kind == "library") {
      // The rest of the line: a path may hold spaces.
      out.library = line.size() > 8 ? line.substr(8) : "";
    } else if (kind == "held" && fields >> name >> value >> blocks) {
      out.held_bytes[name] = std::stoull(value);
      out.held_blocks[name] = std::stoull(blocks);
    } else if (kind == "ready") {
      out.ready = true;
    } else if (kind == "freed50") {
      ++out.freed50;
    }
  }
  return out;
}

std::string SiteHolderJniLib() { return SITE_HOLDER_JNI_LIB; }

JniSiteHolder::JniSiteHolder(const TempDir& dir, const std::string& java_home,
                             std::vector<std::string> workload_args,
                             std::vector<std::string> jvm_flags, SpawnOptions options)
    : out_path_(dir / "jni_site_holder.out"),
      err_path_(dir / "jni_site_holder.err"),
      stdin_(dir / "jni_site_holder.in") {
  if (!stdin_.ok() || SiteHolderJniLib().empty()) return;
  const std::string lib_dir = std::filesystem::path(SiteHolderJniLib()).parent_path().string();
  std::vector<std::string> argv = {java_home + "/bin/java"};
  argv.insert(argv.end(), jvm_flags.begin(), jvm_flags.end());
  argv.insert(argv.end(),
              {"-Djava.library.path=" + lib_dir, "-cp", JAVA_WORKLOADS_CLASSPATH, "JniSiteHolder"});
  argv.insert(argv.end(), workload_args.begin(), workload_args.end());
  options.stdin_path = stdin_.path();
  options.stdout_path = out_path_;
  options.stderr_path = err_path_;
  process_ = Process(std::move(argv), std::move(options));
  started_ =
      WaitFor([&] { return Output().pid > 0 || !process_.running(); }, 60s) && process_.running();
}

std::string JniSiteHolder::Log() const {
  return "stdout:\n" + ReadFile(out_path_) + "stderr:\n" + ReadFile(err_path_);
}

bool JniSiteHolder::Running() { return process_.running(); }

bool JniSiteHolder::Hold(std::chrono::milliseconds timeout) {
  return stdin_.Write("hold\n") && WaitReady(timeout);
}

bool JniSiteHolder::WaitReady(std::chrono::milliseconds timeout) {
  return WaitFor([&] { return Output().ready || !Running(); }, timeout) && Running();
}

bool JniSiteHolder::Free50(std::chrono::milliseconds timeout) {
  const int before = Output().freed50;
  return stdin_.Write("free50\n") &&
         WaitFor([&] { return Output().freed50 > before || !Running(); }, timeout) && Running();
}

}  // namespace memtrimd::testing
