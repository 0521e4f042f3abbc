// `memtrimd jcmd`: one diagnostic command in a JVM, its answer on stdout.
//
// This file links only collectors/ and daemon/units, because the `memtrimd`
// launcher runs it without loading the daemon's shared C++ libraries: their
// loading alone takes longer than the whole attach exchange
// (docs/benchmarks.md).
#pragma once

#include <optional>
#include <span>

#include "daemon/cli/config.h"

namespace memtrimd {

// Runs the command; returns the exit code (0, or 1 when the JVM answered
// with a non-zero status or could not be reached, 2 for a bad pid).
int RunJcmdCommand(const JcmdConfig& c);

// The launcher's parser for `jcmd --pid N [--timeout D] COMMAND...` (args
// start after "jcmd"). It understands only well-formed lines; nullopt means
// "let the full command-line parser answer" (help, errors, anything else), so
// usage messages come from one place.
std::optional<JcmdConfig> ParseSimpleJcmdLine(std::span<const char* const> args);

}  // namespace memtrimd
