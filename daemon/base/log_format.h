// How log lines are written (--log.format). Its own header so that the
// logger below the flags does not depend on the whole configuration.
#pragma once

namespace memtrimd {

enum class LogFormat { kLogfmt, kJson };

}  // namespace memtrimd
