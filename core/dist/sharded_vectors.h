// ShardedVectors: L-BFGS's vectors (core/optim/lbfgs.h) as slices on Sandblaster's shards, seen
// from the coordinator: each operation goes to every shard over its link, and only scalars come
// back (a dot product is the sum of the shards' partial sums, added in shard order). Evaluate
// runs one pass: the shards take the point and zero their gradient sums, `run_pass` has the
// workers compute every work unit and push their sums, then the shards finish the gradient
// (sum / rows + wd W) and return their parts of the L2 term.
//
//   ShardedVectors v(shard_links, n, {.rows = rows, .weight_decay = wd, .timeout = t},
//                    [&](std::uint64_t pass) { return dispatcher.RunPass(pass); });
//   optim::Lbfgs lbfgs(options, v);
//
// Axpy, Scale and Copy are sent without waiting for an answer (a link keeps their order, and a
// shard that fails closes its link, so the next answer the coordinator waits for fails). A pass
// the dispatcher must start over (a worker lost while pushing) is begun again under a new pass
// number. Any shard failure is an error: the job goes back to its newest checkpoint.
// One thread at a time.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/dist/link.h"
#include "core/dist/shard_ranges.h"
#include "core/optim/lbfgs.h"

namespace dtrain::dist {

// What one pass's workers computed, and how the pass went.
struct PassTotals {
  double loss_sum = 0.0;
  std::int64_t correct = 0;
  bool restart = false;                 // a worker was lost mid-push: begin the pass again
  std::vector<int> units_per_worker;    // accepted units, by worker rank
  int backups_issued = 0;
  int backups_won = 0;
  int revoked = 0;
};

struct ShardedVectorsOptions {
  std::size_t rows = 0;  // the objective's rows
  float weight_decay = 0.0f;
  std::chrono::milliseconds timeout{60'000};
};

class ShardedVectors final : public optim::LbfgsVectors {
 public:
  using RunPass = std::function<Result<PassTotals>(std::uint64_t pass)>;
  ShardedVectors(std::vector<Link*> shards, std::size_t num_params, ShardedVectorsOptions options,
                 RunPass run_pass);

  Result<double> Dot(int a, int b) override;
  Status Axpy(double alpha, int x, int y) override;
  Status Scale(double alpha, int v) override;
  Status Copy(int from, int to) override;
  Result<double> Evaluate(int at, int grad) override;

  // Scatters a whole vector to the shards, or gathers it from them (checkpoints).
  Status Load(int vector, std::span<const float> whole);
  Status Gather(int vector, std::span<float> whole);
  // Tells every shard the run is over.
  Status Goodbye();

  // The newest pass's totals; passes run so far (restarts included).
  const PassTotals& last_pass() const { return last_pass_; }
  std::uint64_t passes() const { return pass_; }

 private:
  // Sends `h` to every shard; with `reply`, then reads every shard's reply (values in shard order).
  Result<std::vector<double>> ToAll(const struct SbHeader& h, bool reply);

  std::vector<Link*> shards_;
  std::vector<ShardRange> ranges_;
  ShardedVectorsOptions options_;
  RunPass run_pass_;
  std::uint64_t pass_ = 0;
  PassTotals last_pass_;
};

}  // namespace dtrain::dist
