#include "daemon/server/logger.h"

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <string>

namespace dtrain::server {

Result<Logger::Level> Logger::ParseLevel(std::string_view name) {
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warning") return Level::kWarning;
  if (name == "error") return Level::kError;
  return Status::Error("unknown log level '" + std::string(name) +
                       "' (allowed: debug, info, warning, error)");
}

Logger::Logger(Level level) : level_(level), journald_(std::getenv("JOURNAL_STREAM") != nullptr) {}

void Logger::Write(Level level, std::string_view message) const {
  if (level < level_) return;
  static constexpr const char* kNames[] = {"debug", "info", "warning", "error"};
  static constexpr int kSyslogPriority[] = {7, 6, 4, 3};  // LOG_DEBUG, INFO, WARNING, ERR
  const auto index = static_cast<int>(level);
  std::string line;
  if (journald_) {
    line.push_back('<');
    line += std::to_string(kSyslogPriority[index]);
    line.push_back('>');
  } else {
    char stamp[32];
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    ::localtime_r(&now, &local);
    std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S ", &local);
    line = std::string(stamp) + kNames[index] + ": ";
  }
  line.append(message);
  line.push_back('\n');
  [[maybe_unused]] const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace dtrain::server
