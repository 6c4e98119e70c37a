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

  return ShareChunks(data, {}, gather_tag);
}

Status HierarchicalAllReduce::GatherHostSums(std::span<float> data, compress::ChunkCodec& codec,
                                             std::span<float> tail, std::uint32_t op) {
  last_op_ = {};
  const std::uint32_t sum_tag = (2 * op) & RingAllReduce::kMaxOp;
  const std::uint32_t gather_tag = (2 * op + 1) & RingAllReduce::kMaxOp;
  const ShardRange mine = ShardRangeOf(data.size(), local_.world(), local_.rank());
  const math::PartRange chunk{mine.begin, mine.end};
  codec.BeforeSum(data, chunk);
  if (!data.empty()) {
    if (Status summed = local_.AllReduceSum(data, sum_tag); !summed.ok()) return Within(summed);
    Add(last_op_.local, local_.last_op());
  }

  const std::size_t message = codec.MessageFloats(chunk);
  const std::size_t stride = message + tail.size();
  const auto hosts = static_cast<std::size_t>(cross_.world());
  if (stride > 0) {
    messages_.assign(hosts * stride, 0.0f);
    float* own = messages_.data() + static_cast<std::size_t>(cross_.rank()) * stride;
    codec.Encode(data, chunk, {own, message});
    std::ranges::copy(tail, own + message);
    if (Status across = cross_.AllGather(messages_, op); !across.ok()) {
      return Status::Error("across hosts: " + across.message());
    }
    last_op_.cross = cross_.last_op();
    codec.Decode(messages_, stride, hosts, chunk, data);
    std::ranges::fill(tail, 0.0f);
    for (std::size_t h = 0; h < hosts; ++h) {
      for (std::size_t v = 0; v < tail.size(); ++v) tail[v] += messages_[h * stride + message + v];
    }
  }
  return ShareChunks(data, tail, gather_tag);
}

Status HierarchicalAllReduce::ShareChunks(std::span<float> data, std::span<float> tail,
                                          std::uint32_t tag) {
  const int per_host = local_.world();
  const auto index = static_cast<std::size_t>(local_.rank());
  const ShardRange mine = ShardRangeOf(data.size(), per_host, local_.rank());
  // Chunks differ in size by at most one float: gather them as blocks of the largest.
  const std::size_t largest = ShardRangeOf(data.size(), per_host, 0).size();
  const std::size_t block = largest + tail.size();
  if (block == 0) return Status::Ok();
  blocks_.resize(block * static_cast<std::size_t>(per_host));
  float* own = blocks_.data() + block * index;
  std::copy(data.begin() + static_cast<std::ptrdiff_t>(mine.begin),
            data.begin() + static_cast<std::ptrdiff_t>(mine.end), own);
  std::ranges::copy(tail, own + largest);
  if (Status gathered = local_.AllGather(blocks_, tag); !gathered.ok()) return Within(gathered);
  Add(last_op_.local, local_.last_op());
  std::ranges::fill(tail, 0.0f);
  for (int i = 0; i < per_host; ++i) {
    const ShardRange r = ShardRangeOf(data.size(), per_host, i);
    const float* from = blocks_.data() + block * static_cast<std::size_t>(i);
    std::copy(from, from + r.size(), data.begin() + static_cast<std::ptrdiff_t>(r.begin));
    for (std::size_t v = 0; v < tail.size(); ++v) tail[v] += from[largest + v];
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
