// MeanCollective: the mean of a float range over every replica of a job, the same bits on each:
// the one collective that an uncompressed sync exchange needs (VotingAllReduce,
// SyncAllReduceStrategy, OverlappedSyncStrategy), whether one ring computes it (RingAllReduce) or
// two levels do (HierarchicalAllReduce: within each host, then across hosts).
//
//   MeanCollective& mean = two_level;            // or a RingAllReduce
//   Status s = mean.AllReduceMean(gradient, op);  // every replica, the same size and op
//   mean.LastCost().bytes_sent;                   // what this replica put on the network
//
// Ops are tagged below 2^31 (RingAllReduce::kMaxOp), each distinct from the one before; one op at a
// time, from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.h"

namespace dtrain::dist {

// What an op cost one replica.
struct RingOpStats {
  double wait_seconds = 0.0;  // from the op's start until a neighbour's first segment came:
                              // mostly waiting for the slowest rank to reach the op
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
};

class HierarchicalAllReduce;

class MeanCollective {
 public:
  // data = the mean of every replica's data, bitwise identical on every replica. On failure `data`
  // holds unspecified values and later ops fail too.
  virtual Status AllReduceMean(std::span<float> data, std::uint32_t op) = 0;
  // How many replicas the mean is over.
  virtual int world() const = 0;
  // The bytes this replica puts on the network in an AllReduceMean of `floats` floats.
  virtual std::uint64_t BytesSent(std::size_t floats) const = 0;
  // The last op's cost to this replica: its waits on every level, and the bytes it sent and
  // received over the network (a two-level op's shared-memory traffic within the host is not
  // counted).
  virtual RingOpStats LastCost() const = 0;
  // The collective's two levels where it has them (a compressed gather then sums within each host
  // first: HierarchicalAllReduce::GatherHostSums); null for one ring.
  virtual HierarchicalAllReduce* levels() { return nullptr; }

 protected:
  ~MeanCollective() = default;
};

}  // namespace dtrain::dist
