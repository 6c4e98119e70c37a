// PartitionExchange: what the K partitions of one model-parallel replica send each other, over
// the links of a ring among them (JoinRing; LoopbackRing in tests): a pipeline's activations to
// the next stage and gradients to the previous one, and, for tensor partitions, the all-gather of
// a layer's output blocks and the reduce-scatter of its input gradients.
//
//   PartitionExchange ex(part, parts, links.left, links.right, {.timeout = 30s});
//   Status s = ex.SendNext(activations);          // pipeline: stage part -> part + 1
//   s = ex.AllGather(layer_output, block_bounds);  // tensor: every block, from its owner
//
// Messages carry a tag: per link and direction, the count of messages before it, so both ends
// agree without negotiating; a message out of place is an error naming the peer. In a ring step
// (all-gather, reduce-scatter) every partition sends and receives at once: a thread of the
// exchange sends while the caller receives (the Link contract allows one of each), so no two
// partitions can wait on each other's sends whatever the links buffer. Pipeline messages flow
// one way at a time and are sent by the caller. Every operation must finish within the timeout
// of its start; a dead or silent peer is an error naming it. After a failure the links may be
// mid-message: the exchange refuses further work.
//
// Blocked time is counted (waiting for a peer's message, and in sends), for the partition's
// metrics. One thread at a time; the links must outlive the exchange and serve nothing else.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <thread>

#include "core/dist/link.h"
#include "core/status.h"

namespace dtrain::dist {

struct PartitionExchangeOptions {
  std::chrono::milliseconds timeout{30000};
};

class PartitionExchange {
 public:
  // `left` is partition part - 1 (mod parts), `right` part + 1; with two parts, one link.
  PartitionExchange(int part, int parts, Link* left, Link* right,
                    PartitionExchangeOptions options = {});
  ~PartitionExchange();
  PartitionExchange(const PartitionExchange&) = delete;
  PartitionExchange& operator=(const PartitionExchange&) = delete;

  int part() const { return part_; }
  int parts() const { return parts_; }

  // Pipeline: to the next stage / from the previous one, and back.
  Status SendNext(std::span<const float> data);
  Status RecvPrev(std::span<float> data);
  Status SendPrev(std::span<const float> data);
  Status RecvNext(std::span<float> data);

  // `data` holds block q at [bounds[q], bounds[q + 1]) (parts + 1 bounds). AllGather: this
  // partition's block is filled; afterwards every block is. ReduceScatter: every partition holds
  // a whole array of partial values; afterwards this partition's block holds their sum (the
  // other blocks are scratch). The sums are taken in the same order on every partition.
  Status AllGather(std::span<float> data, std::span<const std::size_t> bounds);
  Status ReduceScatter(std::span<float> data, std::span<const std::size_t> bounds);
  // Sums a small array over the partitions, every one ending with the same values.
  Status AllReduceSum(std::span<float> data);

  // Seconds spent blocked in receives (waiting for a peer) and in sends, and the bytes sent,
  // since the last call.
  struct Waits {
    double receiving = 0.0;
    double sending = 0.0;
    std::uint64_t bytes_sent = 0;
  };
  Waits TakeWaits();

 private:
  struct Counters {
    std::uint32_t sent = 0;
    std::uint32_t received = 0;
  };
  Status Send(Link* link, std::span<const float> data, Deadline deadline);
  Status Recv(Link* link, std::span<float> data, Deadline deadline);
  // A pipeline message on `link`, with its own deadline, its blocked time counted in waits_.
  Status TimedSend(Link* link, std::span<const float> data);
  Status TimedRecv(Link* link, std::span<float> data);
  Status Check(Status status);  // records a failure: later calls fail at once
  Deadline NewDeadline() const;
  int Mod(int i) const { return ((i % parts_) + parts_) % parts_; }
  // One ring step: sends `out` to the right (on the sender thread) while receiving `in` from the
  // left; `fold` runs on what came in once both are done.
  Status RingStep(std::span<const float> out, std::span<float> in, Deadline deadline);
  void SenderLoop();

  int part_, parts_;
  Link* left_;
  Link* right_;
  PartitionExchangeOptions options_;
  std::map<Link*, Counters> counters_;  // per link (one for both sides when left == right)
  Status failed_;
  Waits waits_;
  // The sender thread's one job at a time: set by RingStep, cleared with its result.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::function<Status()> job_;
  std::optional<Status> done_;
  bool stopping_ = false;
  std::thread sender_;
};

}  // namespace dtrain::dist
