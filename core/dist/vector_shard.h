// VectorShard: one Sandblaster parameter shard (core/dist/sandblaster_protocol.md). It holds the
// range [begin, end) of every L-BFGS vector (the parameters, the gradient, the search direction,
// the trial point, the history: optim::LbfgsVectorCount of them) and of the pass's gradient sum,
// runs the vector operations the coordinator orders on its slices (answering dot products with
// its partial sum), serves the pass's point to workers that fetch it and adds the gradient sums
// they push.
//
//   VectorShard shard({.shard = 1, .shards = 2, .begin = r.begin, .end = r.end, ...});
//   copy the starting values into shard.slices() (or the coordinator loads them); then
//   Status s = shard.Serve(coordinator_link, worker_links);   // until the coordinator's goodbye
//
// The coordinator's link is served on the calling thread, each worker's on a thread of its own,
// all under one mutex. A worker whose link fails or breaks the protocol is that worker's end
// only (its link is closed; the coordinator learns of the loss on its own link to the worker); a
// failure on the coordinator's link ends Serve with that error. After the coordinator's goodbye,
// Serve waits up to `timeout` for the workers' goodbyes, then closes the links left.
// Serve once; slices() before or after it, never during.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/dist/link.h"
#include "core/math/buffer.h"
#include "core/optim/vector_slices.h"
#include "core/status.h"

namespace dtrain::dist {

struct VectorShardOptions {
  int shard = 0;  // in [0, shards)
  int shards = 1;
  std::size_t begin = 0;  // ShardRanges(num_params, shards)[shard]
  std::size_t end = 0;
  int vectors = 0;  // L-BFGS's vector count
  // The model's weights (not biases), as [begin, end) ranges of the whole parameter vector: the
  // L2 term's reach.
  std::vector<std::pair<std::size_t, std::size_t>> weights;
  std::chrono::milliseconds timeout{60'000};
};

class VectorShard {
 public:
  explicit VectorShard(VectorShardOptions options);

  optim::VectorSlices& slices() { return slices_; }
  const std::string& name() const { return name_; }

  Status Serve(Link& coordinator, std::span<Link* const> workers);

 private:
  // One coordinator request; `done` set on its goodbye.
  Status Answer(Link& coordinator, const struct SbHeader& h, bool* done);
  void ServeWorker(Link& link);
  Status CheckVector(std::uint32_t index) const;
  // Finishes the pass: grad = sum / rows + wd W(point); returns the partial wd/2 |W(point)|^2.
  double FinishPass(int point, int grad, std::uint64_t rows, double weight_decay);

  const VectorShardOptions options_;
  const std::string name_;
  std::vector<std::pair<std::size_t, std::size_t>> local_weights_;  // within the slice
  optim::VectorSlices slices_;
  math::FloatBuffer sum_;  // the pass's gradient sum

  std::mutex mu_;
  std::condition_variable finished_;
  std::uint64_t pass_ = 0;
  int point_ = 0;
  bool in_pass_ = false;
  int workers_done_ = 0;
};

}  // namespace dtrain::dist
