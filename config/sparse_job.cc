#include "config/sparse_job.h"

#include <array>
#include <string>
#include <string_view>

#include "config/compression_section.h"
#include "config/mode_traits.h"
#include "core/sparse/key_table.h"

namespace dtrain::config::internal {
namespace {

constexpr std::int64_t kMaxFactors = 1024;
constexpr std::array<std::string_view, 8> kDenseModelKeys{
    "hidden", "activation", "loss", "init", "inputs", "outputs", "input_shape", "layers"};

// Reports `key` where it is written, if it is, with `message`; true if it was.
bool ReportIfPresent(TableReader& r, std::string_view key, const std::string& message) {
  const toml::node* node = r.Find(key);
  if (node == nullptr || r.Failed(key)) return false;
  r.Report(*node, key, message);
  return true;
}

}  // namespace

void ReadSparseData(TableReader& data, DataConfig* d) {
  data.Bool("sparse", &d->sparse);
  data.Int("hash_bits", 1, 32, &d->hash_bits);
  data.Bool("stream", &d->stream);
  data.Number("stream_block_mib", OpenClosed(0, 1 << 20), &d->stream_block_mib);
}

void ReadSparseModel(TableReader& model, sparse::SparseModelSpec* m) {
  m->type = sparse::SparseModelType::kLogistic;
  model.Enum("type", sparse::ParseSparseModelType, sparse::SparseModelTypeChoices(), &m->type);
  const toml::node* factors = model.Int("factors", 1, kMaxFactors, &m->factors);
  if (factors != nullptr && m->type != sparse::SparseModelType::kFm && !model.Failed("type")) {
    model.Report(*factors, "factors", "is only used by type \"fm\"");
  }
  for (const std::string_view key : kDenseModelKeys) {
    if (ReportIfPresent(model, key,
                        "is not used by a sparse model (data.sparse = true), which is type "
                        "\"logistic\", \"softmax\" or \"fm\" on the features the rows set")) {
      return;
    }
  }
}

void CheckSparseJob(const JobConfig& job, const SparseReaders& r) {
  const DataConfig& d = job.data;
  if (!d.sparse) {
    if (d.hash_bits > 0) {
      ReportIfPresent(r.data, "hash_bits",
                      "hashes a sparse model's features: it needs "
                      "data.sparse = true");
    }
    if (d.stream) {
      ReportIfPresent(r.data, "stream",
                      "streams a sparse model's training file: it needs data.sparse = true");
    }
    return;
  }
  if (d.stream && d.validation_fraction > 0.0) {
    ReportIfPresent(r.data, "validation_fraction",
                    "is not available with data.stream: the held-out rows would have to be "
                    "picked from the whole file; name a data.test file instead");
  }
  if (d.format != DataFormat::kLibsvm && !r.data.Failed("format")) {
    ReportIfPresent(r.data, "sparse",
                    "keeps libsvm rows sparse: it needs data.format = \"libsvm\", got \"" +
                        std::string(DataFormatName(d.format)) + "\"");
  }
  if (d.standardize || d.scale != 1.0f) {
    ReportIfPresent(r.data, "scale",
                    "is not available with data.sparse: sparse rows are used as they are "
                    "(scaling would touch every feature)");
  }
  if (job.train.weight_decay > 0.0f) {
    ReportIfPresent(r.train, "weight_decay",
                    "would move every parameter of a sparse model at each step: regularise "
                    "with optimizer.type = \"ftrl\" and its l1 and l2");
  }
  if (job.clip_norm > 0.0f) {
    ReportIfPresent(r.train, "clip_norm",
                    "is not available with data.sparse: the gradient's global norm spans "
                    "every feature");
  }
  if (const Status fits = sparse::CheckSparseOptimizer(job.optimizer);
      !fits.ok() && !r.optimizer.Failed("type")) {
    const std::string message = "is \"" +
                                std::string(optim::OptimizerTypeName(job.optimizer.type)) +
                                "\", but data.sparse needs an optimizer that leaves untouched "
                                "features alone: \"sgd\", \"adagrad\" or \"ftrl\"";
    if (!ReportIfPresent(r.optimizer, "type", message)) r.optimizer.Missing("type", message);
  }
  const ModeTraits& mode = TraitsOf(job.cluster.mode);
  if (!mode.sparse && !r.cluster.Failed("mode")) {
    ReportIfPresent(r.cluster, "mode",
                    "is \"" + std::string(ClusterModeName(job.cluster.mode)) +
                        "\", but a sparse model (data.sparse = true) trains in mode \"single\", "
                        "\"async\" or \"sync\" (on parameter servers)");
  }
  // A mode whose shards come with allreduce = "ps" trains a sparse model on them only.
  if (mode.sparse && mode.servers == ServersRule::kWithPsAllReduce &&
      job.cluster.allreduce != AllReduce::kPs) {
    const std::string name(mode.name);
    const std::string message =
        "a sparse model trains in mode \"" + name +
        "\" on parameter servers, where each step moves only its batch's keys: it needs "
        "cluster.allreduce = \"ps\"";
    if (!ReportIfPresent(
            r.cluster, "allreduce",
            "is \"" + std::string(AllReduceName(job.cluster.allreduce)) + "\", but " + message)) {
      ReportIfPresent(r.cluster, "mode", "is \"" + name + "\", but " + message);
    }
  }
  const ClusterConfig defaults;
  const std::string per_step =
      "is not available with data.sparse: a replica pulls its batch's keys before each step and "
      "pushes their gradients after it";
  if (job.cluster.push_every != defaults.push_every)
    ReportIfPresent(r.cluster, "push_every", per_step);
  if (job.cluster.fetch_every != defaults.fetch_every) {
    ReportIfPresent(r.cluster, "fetch_every", per_step);
  }
  if (job.cluster.compression.method != compress::Method::kNone &&
      CompressionApplies(job.cluster)) {
    ReportIfPresent(r.cluster, "compression",
                    "is \"" + std::string(compress::MethodName(job.cluster.compression.method)) +
                        "\", but a sparse model pushes its batch's keys and their rows, which "
                        "compression does not apply to");
  }
}

void WriteSparseModel(const sparse::SparseModelSpec& m, TomlWriter& w) {
  w.Section("model");
  w.String("type", sparse::SparseModelTypeName(m.type));
  if (m.type == sparse::SparseModelType::kFm) w.Int("factors", m.factors);
}

}  // namespace dtrain::config::internal
