#include "core/dist/hierarchical_allreduce.h"

#include <algorithm>

#include "core/dist/shard_ranges.h"
#include "core/math/elementwise.h"

namespace dtrain::dist {
namespace {

void Add(RingOpStats& total, const RingOpStats& op) {
  total.wait_seconds += op.wait_seconds;
  total.bytes_sent += op.bytes_sent;
  total.bytes_received += op.bytes_received;
}

Status Within(const Status& s) { return Status::Error("within the host: " + s.message()); }

}  // namespace

Status HierarchicalAllReduce::AllReduceMean(std::span<float> data, std::uint32_t op) {
  last_op_ = {};
  const std::uint32_t sum_tag = (2 * op) & RingAllReduce::kMaxOp;
  const std::uint32_t gather_tag = (2 * op + 1) & RingAllReduce::kMaxOp;
  const int per_host = local_.world();
  const int index = local_.rank();

  if (Status summed = local_.AllReduceSum(data, sum_tag); !summed.ok()) return Within(summed);
  Add(last_op_.local, local_.last_op());

  const ShardRange mine = ShardRangeOf(data.size(), per_host, index);
  const std::span<float> chunk = data.subspan(mine.begin, mine.size());
  if (!chunk.empty()) {
    if (Status across = cross_.AllReduceSum(chunk, op); !across.ok()) {
      return Status::Error("across hosts: " + across.message());
    }
    last_op_.cross = cross_.last_op();
    math::Scale(1.0f / static_cast<float>(world()), chunk);
  }

  // Chunks differ in size by at most one float: gather them as blocks of the largest.
  const std::size_t block = ShardRangeOf(data.size(), per_host, 0).size();
  blocks_.resize(block * static_cast<std::size_t>(per_host));
  std::copy(chunk.begin(), chunk.end(),
            blocks_.begin() + static_cast<std::ptrdiff_t>(block * static_cast<std::size_t>(index)));
  if (Status gathered = local_.AllGather(blocks_, gather_tag); !gathered.ok()) {
    return Within(gathered);
  }
  Add(last_op_.local, local_.last_op());
  for (int i = 0; i < per_host; ++i) {
    const ShardRange r = ShardRangeOf(data.size(), per_host, i);
    const auto from =
        blocks_.begin() + static_cast<std::ptrdiff_t>(block * static_cast<std::size_t>(i));
    std::copy(from, from + static_cast<std::ptrdiff_t>(r.size()),
              data.begin() + static_cast<std::ptrdiff_t>(r.begin));
  }
  return Status::Ok();
}

std::uint64_t HierarchicalAllReduce::BytesSent(std::size_t floats) const {
  return cross_.BytesSent(ShardRangeOf(floats, local_.world(), local_.rank()).size());
}

RingOpStats HierarchicalAllReduce::LastCost() const {
  return {.wait_seconds = last_op_.local.wait_seconds + last_op_.cross.wait_seconds,
          .bytes_sent = last_op_.cross.bytes_sent,
          .bytes_received = last_op_.cross.bytes_received};
}

}  // namespace dtrain::dist
