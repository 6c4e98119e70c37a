#include "config/early_stopping_key.h"

#include <string>

namespace dtrain::config::internal {

namespace {
constexpr std::int64_t kMaxPatience = 1'000'000;
}  // namespace

const toml::node* ReadEarlyStopping(TableReader& train, Sink& sink,
                                    train::EarlyStoppingOptions* out) {
  const toml::node* node = train.Find("early_stopping");
  if (node == nullptr) return nullptr;
  if (!node->is_table()) {
    return train.Report(*node, "early_stopping",
                        "must be an inline table { metric = \"eval_loss\", patience = 5, "
                        "min_delta = 0.0 }, got " +
                            Describe(*node));
  }
  TableReader r(node->as_table(), train.Dotted("early_stopping"), sink);
  train::EarlyStoppingOptions read;
  std::string metric;
  const toml::node* named = r.OneOf("metric", train::kEarlyStoppingMetricChoices, &metric);
  const toml::node* patience = r.Int("patience", 1, kMaxPatience, &read.patience);
  r.Number("min_delta", Closed(0, 1e9), &read.min_delta);
  const TableReader* const readers[] = {&r};
  RejectUnknown(readers, sink);
  if (named == nullptr && !r.Failed("metric")) {
    r.Missing("metric", "is required: which evaluation to judge (" +
                            std::string(train::kEarlyStoppingMetricChoices) + ")");
  }
  if (patience == nullptr && !r.Failed("patience")) {
    r.Missing("patience",
              "is required: how many evaluations in a row without improvement stop the job "
              "(an integer >= 1)");
  }
  if (named == nullptr || patience == nullptr || r.Failed("min_delta")) return nullptr;
  read.metric = train::ParseEarlyStoppingMetric(metric).value();
  *out = read;
  return node;
}

namespace {

// Why the job cannot judge its evaluations by `metric` (empty when it can).
std::string WhyNoJudgement(const JobConfig& job, train::EarlyStoppingMetric metric) {
  const DataConfig& d = job.data;
  if (d.format == DataFormat::kSynthetic ? d.test_rows == 0
                                         : d.test.empty() && d.validation_fraction == 0) {
    return "needs held-out data to evaluate on: data.test, data.validation_fraction > 0, or "
           "data.test_rows > 0 for synthetic data";
  }
  if (metric == train::EarlyStoppingMetric::kEvalAccuracy &&
      job.model.loss == model::LossType::kMeanSquaredError) {
    return "metric \"eval_accuracy\" needs a classification model, this one is trained with "
           "loss \"mse\": use metric \"eval_loss\"";
  }
  return "";
}

}  // namespace

void CheckEarlyStopping(const JobConfig& job, TableReader& train, const toml::node* node) {
  if (node == nullptr) return;
  if (std::string why = WhyNoJudgement(job, job.train.early_stopping.metric); !why.empty()) {
    train.Report(*node, "early_stopping", why);
  }
}

const toml::node* ReadKeepBest(TableReader& checkpoint, config::CheckpointConfig* out) {
  std::string metric;
  const toml::node* node =
      checkpoint.OneOf("keep_best", train::kEarlyStoppingMetricChoices, &metric);
  if (node != nullptr) out->keep_best = train::ParseEarlyStoppingMetric(metric).value();
  return node;
}

void CheckKeepBest(const JobConfig& job, TableReader& checkpoint, const toml::node* node) {
  if (node == nullptr || !job.checkpoint.keep_best) return;
  const train::EarlyStoppingMetric metric = *job.checkpoint.keep_best;
  const train::EarlyStoppingOptions& early = job.train.early_stopping;
  std::string why;
  if (job.cluster.model_parallel > 1) {
    why =
        "is not available with cluster.model_parallel > 1: no process holds the whole model "
        "its evaluation judged";
  } else if (job.data.sparse && job.cluster.mode == ClusterMode::kAsync) {
    why =
        "is not available for a sparse model in cluster.mode = \"async\": the shards apply the "
        "other replicas' pushes while replica 0 evaluates, so no process holds the model its "
        "evaluation judged (train.early_stopping is allowed there; mode \"sync\" keeps one)";
  } else if (early.enabled() && early.metric != metric) {
    why = "= \"" + std::string(train::EarlyStoppingMetricName(metric)) +
          "\" conflicts with train.early_stopping's metric \"" +
          std::string(train::EarlyStoppingMetricName(early.metric)) +
          "\": with early stopping on, the best model is judged by its metric; drop "
          "checkpoint.keep_best or name the same metric in both";
  } else {
    why = WhyNoJudgement(job, metric);
  }
  if (!why.empty()) checkpoint.Report(*node, "keep_best", why);
}

void WriteKeepBest(const config::CheckpointConfig& checkpoint, TomlWriter& w) {
  if (!checkpoint.keep_best) return;
  w.String("keep_best", train::EarlyStoppingMetricName(*checkpoint.keep_best));
}

void WriteEarlyStopping(const train::EarlyStoppingOptions& options, TomlWriter& w) {
  if (!options.enabled()) return;
  w.InlineTable("early_stopping",
                {{"metric", TomlString(train::EarlyStoppingMetricName(options.metric))},
                 {"patience", std::to_string(options.patience)},
                 {"min_delta", TomlFloat(options.min_delta)}});
}

}  // namespace dtrain::config::internal
