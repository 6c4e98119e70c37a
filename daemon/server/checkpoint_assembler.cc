#include "daemon/server/checkpoint_assembler.h"

#include <algorithm>
#include <utility>

namespace dtrain::server {

std::optional<std::vector<store::CheckpointData>> CheckpointAssembler::Add(
    int partition, store::CheckpointData part) {
  const std::int64_t step = part.step;
  std::vector<std::optional<store::CheckpointData>>& parts = pending_[step];
  parts.resize(static_cast<std::size_t>(partitions_));
  parts[static_cast<std::size_t>(partition)] = std::move(part);
  if (!std::all_of(parts.begin(), parts.end(), [](const auto& p) { return p.has_value(); })) {
    return std::nullopt;
  }
  std::vector<store::CheckpointData> all;
  for (auto& p : parts) all.push_back(std::move(*p));
  pending_.erase(step);
  return all;
}

}  // namespace dtrain::server
