// Where a HotSpot JVM's options come from, read the way the java launcher
// and the JVM read them: @argfiles, JDK_JAVA_OPTIONS (the launcher's rules),
// JAVA_TOOL_OPTIONS, _JAVA_OPTIONS and -XX:VMOptionsFile= (the JVM's rules),
// and -XX:Flags= files. Pure: files are read through a callback, so the
// rules are tested on fixtures and fuzzed.
//
// memtrimd uses this only when the JVM's own verdict (hsperfdata) is
// missing, to decide whether SIGQUIT would start an attach listener or only
// print a thread dump into the application's log.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/common/status.h"

namespace memtrimd::jvm {

// The launcher's @argfile rules (libjli args.c): tokens split at space, tab,
// CR, LF and FF; ' or " quote (a newline ends a quoted token too); inside
// quotes a backslash escapes (\n \r \t \f, any other character stands for
// itself, backslash-newline joins lines); '#' outside quotes comments to the
// end of the line. Never fails: the launcher accepts any file.
std::vector<std::string> SplitArgFile(std::string_view text);

// JDK_JAVA_OPTIONS (the launcher's rules for it): split at isspace(), ' or "
// group without escapes. kParseError for an unmatched quote (the launcher
// refuses to start then).
Result<std::vector<std::string>> SplitLauncherEnvOptions(std::string_view text);

// JAVA_TOOL_OPTIONS, _JAVA_OPTIONS and -XX:VMOptionsFile= contents (HotSpot's
// Arguments::parse_options_buffer): the same splitting and quoting as above;
// kParseError for an unmatched quote (the JVM refuses to start then).
Result<std::vector<std::string>> SplitVmOptions(std::string_view text);

// A -XX:Flags= file (HotSpot's process_settings_file): tokens such as
// "+DisableAttachMechanism" split at whitespace, ' or " quote until the
// matching quote or a newline, '#' at the start of a token comments to the
// end of the line. The JVM stops reading at a token of 1023 bytes; so does
// this.
std::vector<std::string> SplitFlagsFile(std::string_view text);

// One JVM option and where it was found ("command line", "JAVA_TOOL_OPTIONS",
// "@/etc/app/jvm.args", ...). -XX:Flags= entries are given in -XX: form.
struct JvmOption {
  std::string text;
  std::string origin;
};

// What the process was started with.
struct OptionSources {
  std::vector<std::string> argv;  // /proc/<pid>/cmdline, argv[0] first
  std::optional<std::string> java_tool_options;
  std::optional<std::string> jdk_java_options;
  std::optional<std::string> underscore_java_options;
};

// Reads a file named by an option (a relative name is the target's working
// directory's). Errors make the whole answer unknown.
using OptionFileReader = std::function<Result<std::string>(const std::string& path)>;

struct OptionLimits {
  std::size_t max_files = 32;             // argfiles, options files and flags files
  std::size_t max_options = 1u << 16;     // options in all sources together
  std::size_t max_file_bytes = 1u << 20;  // checked by the caller's reader too
};

// The options in the order the JVM applies them, so that the last of
// -XX:+Flag / -XX:-Flag wins: -XX:Flags= files first, then
// JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, the command line up to the main class
// (@argfiles expanded in place, as the launcher does), _JAVA_OPTIONS; every
// -XX:VMOptionsFile= expanded where it stands. Arguments after the main class
// belong to the application; those that would disable attach or signals are
// still returned (origin "application arguments"), so that a main class
// misjudged here can only make memtrimd more careful. Errors (kNotFound,
// kParseError, kTooLarge, ...) mean "unknown": a file could not be read, a
// quote is unmatched, a limit was hit.
Result<std::vector<JvmOption>> ResolveJvmOptions(const OptionSources& sources,
                                                 const OptionFileReader& read_file,
                                                 const OptionLimits& limits = {});

}  // namespace memtrimd::jvm
