#include "cmd/compression_view.h"

#include <cstdio>
#include <string>
#include <vector>

#include "cmd/text_table.h"
#include "daemon/runner/training_session.h"

namespace dtrain::cli {
namespace {

constexpr std::size_t kFloatBytes = sizeof(float);

double Ratio(std::size_t bytes, std::size_t sent_bytes) {
  return sent_bytes == 0 ? 1.0 : static_cast<double>(bytes) / static_cast<double>(sent_bytes);
}

// The buckets exchanged during the backward pass; 0 when the exchange follows the pass.
std::size_t OverlapBuckets(const config::JobConfig& job, const model::ModelSpec& spec) {
  const std::size_t buckets = runner::BucketsOf(job, spec).size();
  return buckets > 1 ? buckets : 0;
}

}  // namespace

void PrintCompressionPlan(const config::JobConfig& job, const model::ModelSpec& spec,
                          std::ostream& out) {
  const compress::Settings& settings = job.cluster.compression;
  if (settings.method == compress::Method::kNone) return;
  const std::vector<compress::TensorPlan> plan = runner::CompressionPlanOf(job, spec);
  const std::size_t bytes = compress::PlanFloats(plan) * kFloatBytes;
  const std::size_t sent = compress::PlanSentFloats(plan) * kFloatBytes;
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.1f", Ratio(bytes, sent));
  out << "\n# compression \"" << compress::MethodName(settings.method) << "\": each replica sends "
      << sent << " of the gradient's " << bytes << " bytes a step (" << ratio << "x less)\n";
  if (const std::size_t buckets = OverlapBuckets(job, spec); buckets > 0) {
    out << "# overlapped: " << runner::DescribeOverlap(job, buckets)
        << " (bucket_bytes = " << job.cluster.bucket_bytes << ")\n";
  }
  TextTable table({"TENSOR", "SHAPE", "ENCODING", "BYTES", "SENT"},
                  {false, false, false, true, true});
  for (const compress::TensorPlan& t : plan) {
    table.AddRow({{t.tensor.name},
                  {std::to_string(t.tensor.rows) + "x" + std::to_string(t.tensor.cols)},
                  {std::string(compress::EncodingName(t.encoding))},
                  {std::to_string(t.tensor.count() * kFloatBytes)},
                  {std::to_string(t.sent_floats * kFloatBytes)}});
  }
  table.Print(out, /*color=*/false, "#   ");
}

nlohmann::json CompressionPlanJson(const config::JobConfig& job, const model::ModelSpec& spec) {
  const compress::Settings& settings = job.cluster.compression;
  if (settings.method == compress::Method::kNone) return nullptr;
  const std::vector<compress::TensorPlan> plan = runner::CompressionPlanOf(job, spec);
  nlohmann::json tensors = nlohmann::json::array();
  for (const compress::TensorPlan& t : plan) {
    tensors.push_back({{"name", t.tensor.name},
                       {"rows", t.tensor.rows},
                       {"cols", t.tensor.cols},
                       {"encoding", std::string(compress::EncodingName(t.encoding))},
                       {"bytes", t.tensor.count() * kFloatBytes},
                       {"sent_bytes", t.sent_floats * kFloatBytes}});
  }
  const std::size_t bytes = compress::PlanFloats(plan) * kFloatBytes;
  const std::size_t sent = compress::PlanSentFloats(plan) * kFloatBytes;
  return {{"method", std::string(compress::MethodName(settings.method))},
          {"tensors", std::move(tensors)},
          {"bytes", bytes},
          {"sent_bytes", sent},
          {"ratio", Ratio(bytes, sent)},
          {"overlap_buckets", OverlapBuckets(job, spec)}};
}

}  // namespace dtrain::cli
