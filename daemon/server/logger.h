// Logger: the daemon's own messages on stderr. Under journald (JOURNAL_STREAM set) each line
// carries a "<N>" priority prefix and no timestamp (the journal adds one); otherwise an ISO
// timestamp and the level name.
//
//   Logger log(Logger::Level::kInfo);
//   log.Info("listening on " + path);
//
// Safe for concurrent use (one write(2) per line).
#pragma once

#include <string_view>

#include "core/status.h"

namespace dtrain::server {

class Logger {
 public:
  enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
  static Result<Level> ParseLevel(std::string_view name);  // debug, info, warning, error

  explicit Logger(Level level);
  void set_level(Level level) { level_ = level; }

  void Debug(std::string_view message) const { Write(Level::kDebug, message); }
  void Info(std::string_view message) const { Write(Level::kInfo, message); }
  void Warning(std::string_view message) const { Write(Level::kWarning, message); }
  void Error(std::string_view message) const { Write(Level::kError, message); }

 private:
  void Write(Level level, std::string_view message) const;
  Level level_;
  bool journald_;
};

}  // namespace dtrain::server
