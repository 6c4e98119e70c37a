// HierarchicalAllReduce: the mean of a float range over h hosts of r ranks each, in two levels, so
// that the network carries what h single ranks would send (issue 44's hierarchy):
//   1. the r ranks of a host sum the range over their ring within the host (shared memory when
//      JoinRings made it with LinkTransport::kAuto);
//   2. the rank at local index i all-reduces chunk i of its host's sum (ShardRangeOf(size, r, i))
//      with the ranks at index i on the other hosts, over its ring across hosts, and scales it by
//      1/(h*r) once;
//   3. the host's ranks all-gather their finished chunks over the ring within the host.
//
//   HierarchicalAllReduce two_level(local_ring, cross_ring);
//   Status s = two_level.AllReduceMean(gradient, /*op=*/step);   // every rank, the same op
//
// Bitwise identity: a host's sum is identical on its ranks (the ring's promise), chunk i's mean is
// computed by the ring across hosts from those sums, identical on the ranks at index i, then only
// copied: every rank of the job ends with the same bits. The order of additions differs from one
// flat ring's, so the bits may too.
// Op tags: the ring within the host runs two ops per call, tagged 2*op and 2*op + 1 (mod 2^31);
// the ring across hosts one, tagged op.
// Failures: an op fails when either ring's does, with the ring's error (which names the rank and
// the op) after "within the host: " or "across hosts: "; the rings then refuse further ops.
// GatherHostSums is the same three steps for values that cannot be summed on their way across
// hosts (bf16, top-k: compress::ChunkCodec): step 2 becomes an all-gather of each host's encoded
// chunk i among the ranks at index i, which each decode into chunk i of the mean. It carries
// `tail` floats of every rank beside its chunk (the stop votes), summed over every rank.
// One op at a time, from one thread; both rings (and their links) must outlive this object. It is
// a MeanCollective: what averages an uncompressed sync job's gradients, whole or by buckets.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/compress/chunk_codec.h"
#include "core/dist/ring_allreduce.h"
#include "core/status.h"

namespace dtrain::dist {

// What the last op cost this rank on each level.
struct TwoLevelOpStats {
  RingOpStats local;  // both ops within the host, added
  RingOpStats cross;  // the op across hosts: what this rank put on the network
};

class HierarchicalAllReduce final : public MeanCollective {
 public:
  // `local`: this host's ranks; `cross`: the ranks at this rank's local index on every host.
  HierarchicalAllReduce(RingAllReduce& local, RingAllReduce& cross)
      : local_(local), cross_(cross) {}

  // data = the mean of every rank's data (h*r ranks), the same bits on every rank. Every rank
  // passes the same size and op (distinct from the previous op's). On failure `data` holds
  // unspecified values.
  Status AllReduceMean(std::span<float> data, std::uint32_t op) override;

  // data = the mean of every rank's data through `codec` (see above), the same bits on every rank;
  // tail = the sum over every rank of its tail (all ranks pass the same sizes and op).
  Status GatherHostSums(std::span<float> data, compress::ChunkCodec& codec, std::span<float> tail,
                        std::uint32_t op);

  int world() const override { return local_.world() * cross_.world(); }
  HierarchicalAllReduce* levels() override { return this; }
  // This rank's chunk's all-reduce across hosts.
  std::uint64_t BytesSent(std::size_t floats) const override;
  const TwoLevelOpStats& last_op() const { return last_op_; }
  // Both levels' waits; the bytes of the op across hosts only (the network's).
  RingOpStats LastCost() const override;

 private:
  // Step 3: every rank of the host gets each local index's chunk of data, and tail = the sum of
  // their tails; tagged `tag`.
  Status ShareChunks(std::span<float> data, std::span<float> tail, std::uint32_t tag);

  RingAllReduce& local_;  // owned by the caller, with its links
  RingAllReduce& cross_;
  // The all-gather within the host: r equal blocks, each rank's chunk (and tail) at its index.
  std::vector<float> blocks_;
  std::vector<float> messages_;  // GatherHostSums's across hosts: one block per host
  TwoLevelOpStats last_op_;
};

}  // namespace dtrain::dist
