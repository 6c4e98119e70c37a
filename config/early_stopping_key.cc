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

void CheckEarlyStopping(const JobConfig& job, TableReader& train, const toml::node* node) {
  if (node == nullptr) return;
  const auto refuse = [&](const std::string& why) { train.Report(*node, "early_stopping", why); };
  const DataConfig& d = job.data;
  if (job.data.sparse) {
    refuse(
        "is not available for sparse models (data.sparse) yet: only the dense trainer "
        "judges its evaluations");
  } else if (job.optimizer.type == optim::OptimizerType::kLbfgs) {
    refuse(
        "is not available with optimizer.type = \"lbfgs\" yet: only the dense trainer "
        "judges its evaluations");
  } else if (d.format == DataFormat::kSynthetic ? d.test_rows == 0
                                                : d.test.empty() && d.validation_fraction == 0) {
    refuse(
        "needs held-out data to evaluate on: data.test, data.validation_fraction > 0, or "
        "data.test_rows > 0 for synthetic data");
  } else if (job.train.early_stopping.metric == train::EarlyStoppingMetric::kEvalAccuracy &&
             job.model.loss == model::LossType::kMeanSquaredError) {
    refuse(
        "metric \"eval_accuracy\" needs a classification model, this one is trained with loss "
        "\"mse\": use metric \"eval_loss\"");
  }
}

void WriteEarlyStopping(const train::EarlyStoppingOptions& options, TomlWriter& w) {
  if (!options.enabled()) return;
  w.InlineTable("early_stopping",
                {{"metric", TomlString(train::EarlyStoppingMetricName(options.metric))},
                 {"patience", std::to_string(options.patience)},
                 {"min_delta", TomlFloat(options.min_delta)}});
}

}  // namespace dtrain::config::internal
