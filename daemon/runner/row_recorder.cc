#include "daemon/runner/row_recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dtrain::runner {

std::unique_ptr<RowRecorder> RowRecorder::FromEnvironment(int rank) {
  const char* prefix = std::getenv("DTRAIN_RECORD_ROWS");
  if (prefix == nullptr || *prefix == '\0') return nullptr;
  std::string path = std::string(prefix) + "." + std::to_string(rank);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) {
    std::fprintf(stderr, "DTRAIN_RECORD_ROWS: cannot open %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return nullptr;
  }
  return std::unique_ptr<RowRecorder>(new RowRecorder(std::move(fd), std::move(path)));
}

void RowRecorder::Record(const train::Trainer& trainer) {
  if (!fd_) return;
  const train::Trainer::TakenBatch& taken = trainer.last_batch();
  line_.clear();
  line_ += std::to_string(taken.at.epoch);
  line_ += ' ';
  line_ += std::to_string(taken.at.batch);
  line_ += ' ';
  line_ += std::to_string(trainer.options().world_size);
  line_ += ' ';
  line_ += std::to_string(trainer.options().rank);
  for (const std::uint32_t row : taken.rows) {
    line_ += ' ';
    line_ += std::to_string(row);
  }
  Append();
}

void RowRecorder::RecordMasks(const train::Trainer& trainer) {
  const train::Trainer::TakenBatch& taken = trainer.last_batch();
  if (!fd_ || taken.masks.empty()) return;
  line_ = "T ";
  line_ += std::to_string(taken.at.epoch);
  line_ += ' ';
  line_ += std::to_string(taken.at.batch);
  line_ += ' ';
  line_ += std::to_string(trainer.options().world_size);
  for (const std::uint64_t mask : taken.masks) {
    line_ += ' ';
    line_ += std::to_string(mask);
  }
  Append();
}

void RowRecorder::Append() {
  line_ += '\n';
  if (::write(fd_.get(), line_.data(), line_.size()) != static_cast<ssize_t>(line_.size())) {
    std::fprintf(stderr, "DTRAIN_RECORD_ROWS: cannot append to %s: %s; recording stops\n",
                 path_.c_str(), std::strerror(errno));
    fd_.reset();
  }
}

}  // namespace dtrain::runner
