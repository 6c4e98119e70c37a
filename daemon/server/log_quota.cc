#include "daemon/server/log_quota.h"

#include "config/job_memory.h"

namespace dtrain::server {

LogQuota::Verdict LogQuota::Admit(std::uint64_t line_bytes) {
  const std::uint64_t cost = line_bytes + kRowCost;
  if (dropped_lines_ == 0 && kept_ <= bytes_ && cost <= bytes_ - kept_) {
    kept_ += cost;
    return kKeep;
  }
  ++dropped_lines_;
  dropped_bytes_ += line_bytes;
  if (dropped_lines_ != next_note_) return kDropped;
  next_note_ = next_note_ == 1 ? 1000 : next_note_ * 10;
  return kNote;
}

std::string LogQuota::Note() const {
  if (dropped_lines_ > 1) return Dropped(" dropped so far");
  return reached_ + " (" + config::FormatBytes(bytes_) + " of lines " + scope_ +
         "): later lines are dropped and counted";
}

std::string LogQuota::SummaryLine() const { return Dropped(" dropped"); }

std::string LogQuota::Dropped(std::string_view suffix) const {
  return reached_ + ": " + std::to_string(dropped_lines_) +
         (dropped_lines_ == 1 ? " line (" : " lines (") + config::FormatBytes(dropped_bytes_) + ")" +
         std::string(suffix);
}

}  // namespace dtrain::server
