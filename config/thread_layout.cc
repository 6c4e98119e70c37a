#include "config/thread_layout.h"

#include <algorithm>

namespace dtrain::config {

std::string ThreadLayout::Describe() const {
  if (threads == 1) return "1 thread";
  const std::string n = std::to_string(threads);
  return split ? n + " threads, each a slice of the batch" : n + " BLAS threads";
}

int ThreadsPerReplica(const JobConfig& job, int replicas_on_host, int host_cores) {
  if (job.threads > 0) return job.threads;
  return std::max(1, host_cores / std::max(1, replicas_on_host));
}

double MultiplyAddsPerRow(const model::Model& model) {
  double total = 0.0;
  for (std::size_t l = 0; l < model.NumLayers(); ++l) {
    const model::Layer& layer = model.layer(l);
    const model::Shape out = layer.output();
    total += static_cast<double>(layer.NumWeights()) * out.height * out.width;
  }
  return total;
}

ThreadLayout ChooseThreadLayout(const JobConfig& job, const model::Model& model,
                                int replicas_on_host, int host_cores) {
  const int threads = ThreadsPerReplica(job, replicas_on_host, host_cores);
  const std::string cores = job.threads == 0 ? std::to_string(threads) + " of the host's cores"
                                             : "train.threads = " + std::to_string(threads);
  if (threads == 1) return {1, false, cores};
  if (job.cluster.model_parallel > 1 || job.optimizer.type == optim::OptimizerType::kLbfgs) {
    return {threads, false,
            cores + "; L-BFGS and model-parallel partitions run their passes whole"};
  }
  if (!model::SplitsBatches(model)) {
    return {threads, false,
            cores + "; the model keeps running statistics (batchnorm), so its batch is not split"};
  }
  const int slices = std::min(threads, std::max(1, job.train.batch_size / kMinSliceRows));
  if (slices == 1) {
    return {1, false,
            "batches of " + std::to_string(job.train.batch_size) + " rows are too small to split"};
  }
  const double slice_work =
      MultiplyAddsPerRow(model) * job.train.batch_size / static_cast<double>(slices);
  if (slice_work < kMinSliceMultiplyAdds) {
    return {1, false, "the model is too small for a second thread to pay"};
  }
  return {slices, true, cores};
}

}  // namespace dtrain::config
