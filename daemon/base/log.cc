#include "daemon/base/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>

#include "daemon/base/json_writer.h"

namespace memtrimd::log {
namespace {

LogFormat g_format = LogFormat::kLogfmt;

bool NeedsQuotes(std::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\') return true;
  }
  return false;
}

void AppendLogfmtValue(std::string& out, std::string_view v) {
  if (!NeedsQuotes(v)) {
    out += v;
    return;
  }
  // logfmt quoting is JSON string quoting in practice (Go's strconv.Quote).
  AppendJsonString(out, v);
}

std::string Now() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[80];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

void Emit(spdlog::level::level_enum lvl, std::string_view name, std::string_view msg,
          std::initializer_list<Field> fields) {
  auto logger = spdlog::default_logger_raw();
  if (!logger->should_log(lvl)) return;
  std::string line = g_format == LogFormat::kJson ? RenderJson(Now(), name, msg, fields)
                                                  : RenderLogfmt(Now(), name, msg, fields);
  logger->log(lvl, line);
}

}  // namespace

std::string RenderLogfmt(std::string_view ts, std::string_view level, std::string_view msg,
                         std::initializer_list<Field> fields) {
  std::string out = "ts=";
  out += ts;
  out += " level=";
  out += level;
  out += " msg=";
  AppendLogfmtValue(out, msg);
  for (const Field& f : fields) {
    out += ' ';
    out += f.first;
    out += '=';
    AppendLogfmtValue(out, f.second);
  }
  return out;
}

std::string RenderJson(std::string_view ts, std::string_view level, std::string_view msg,
                       std::initializer_list<Field> fields) {
  JsonWriter w;
  w.BeginObject().Key("ts").String(ts).Key("level").String(level).Key("msg").String(msg);
  for (const Field& f : fields) w.Key(f.first).String(f.second);
  w.EndObject();
  return w.str();
}

void Init(const std::string& level, LogFormat format) {
  g_format = format;
  auto logger = spdlog::stderr_logger_mt("memtrimd");
  logger->set_pattern("%v");  // lines are rendered above, fields and all
  logger->set_level(spdlog::level::from_str(level == "warn" ? "warning" : level));
  logger->flush_on(spdlog::level::debug);
  spdlog::set_default_logger(logger);
}

void Debug(std::string_view msg, std::initializer_list<Field> fields) {
  Emit(spdlog::level::debug, "debug", msg, fields);
}
void Info(std::string_view msg, std::initializer_list<Field> fields) {
  Emit(spdlog::level::info, "info", msg, fields);
}
void Warn(std::string_view msg, std::initializer_list<Field> fields) {
  Emit(spdlog::level::warn, "warn", msg, fields);
}
void Error(std::string_view msg, std::initializer_list<Field> fields) {
  Emit(spdlog::level::err, "error", msg, fields);
}

}  // namespace memtrimd::log
