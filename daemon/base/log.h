// Structured logging on spdlog: one line per event, logfmt or JSON, with
// key/value fields. Thread-safe.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "daemon/base/log_format.h"

namespace memtrimd::log {

using Field = std::pair<std::string_view, std::string>;

// Installs the stderr logger. REQUIRES: level is debug|info|warn|error.
void Init(const std::string& level, LogFormat format);

void Debug(std::string_view msg, std::initializer_list<Field> fields = {});
void Info(std::string_view msg, std::initializer_list<Field> fields = {});
void Warn(std::string_view msg, std::initializer_list<Field> fields = {});
void Error(std::string_view msg, std::initializer_list<Field> fields = {});

// Pure renderers, exposed for tests.
std::string RenderLogfmt(std::string_view ts, std::string_view level, std::string_view msg,
                         std::initializer_list<Field> fields);
std::string RenderJson(std::string_view ts, std::string_view level, std::string_view msg,
                       std::initializer_list<Field> fields);

}  // namespace memtrimd::log
