// ThreadLayout: how one replica of a job uses the cores it is given — how many threads, and
// whether its batch is split over them (each slice's pass on its own thread with single-threaded
// GEMMs: model::LocalNetwork) or one pass runs with that many OpenBLAS threads. Measured on the
// 2-core machine (bench/README.md, "Every core"): splitting the batch is the faster
// of the two wherever the model can be split; OpenBLAS's own threads gain little on a step's
// small GEMMs and lose on small models.
//
//   ThreadLayout t = ChooseThreadLayout(job, model, /*replicas_on_host=*/1, OnlineCores());
//   model::LocalNetwork net(spec, capacity, t.split ? t.threads : 1);
//   math::SetBlasThreads(t.BlasThreads());
//
// Pure functions of their arguments.
#pragma once

#include <string>

#include "config/job.h"
#include "core/model/model.h"

namespace dtrain::config {

struct ThreadLayout {
  int threads = 1;     // cores the replica's passes use
  bool split = false;  // the batch split over `threads` threads; otherwise `threads` BLAS threads
  // Why this layout, for dtrain validate and the job's events.
  std::string reason;

  int BlasThreads() const { return split ? 1 : threads; }
  // Rows of each pass over a batch of `batch_size` rows: the batch, or its largest slice.
  int PassRows(int batch_size) const {
    return split ? (batch_size + threads - 1) / threads : batch_size;
  }
  // "2 threads, each a slice of the batch", "1 thread", "4 BLAS threads": what the job shows.
  std::string Describe() const;
};

// Cores each replica of a job may use on a host: train.threads, or when it is 0 (auto) the
// host's cores shared evenly among the job's replicas there, at least 1.
int ThreadsPerReplica(const JobConfig& job, int replicas_on_host, int host_cores);

// Multiply-adds of one row's forward pass (each layer's weights times the positions they are
// applied at): what a step's compute grows with.
double MultiplyAddsPerRow(const model::Model& model);

// The layout of one replica: ThreadsPerReplica threads at most; the batch split over them when
// the model can be split (no running statistics; not L-BFGS, not a model-parallel partition,
// whose passes use BLAS threads) and each slice keeps at least kMinSliceRows rows; a single
// thread for a model too small for a second one to pay (under kMinSliceMultiplyAdds per slice
// and step: softmax regression on 784 features measured 0.89x with 2 threads through dtrain run),
// so no layout is slower than one thread.
ThreadLayout ChooseThreadLayout(const JobConfig& job, const model::Model& model,
                                int replicas_on_host, int host_cores);

inline constexpr int kMinSliceRows = 8;
inline constexpr double kMinSliceMultiplyAdds = 4e6;

}  // namespace dtrain::config
