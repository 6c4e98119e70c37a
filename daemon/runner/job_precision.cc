#include "daemon/runner/job_precision.h"

#include "core/math/precision.h"
#include "core/net/host_info.h"

namespace dtrain::runner {

Result<std::string> UsePrecision(const config::JobConfig& job) {
  math::SetPrecision(math::Precision::kFp32);
  if (job.precision != math::Precision::kBf16) return std::string();
  const math::Bf16Support bf16 = math::NativeBf16();
  if (!bf16.native) {
    return Status::Error("train.precision = " + math::Bf16Refusal(bf16) + " on host " +
                         net::LocalHostName());
  }
  math::SetPrecision(math::Precision::kBf16);
  return "precision: bf16 matrix products and convolutions on " + bf16.how +
         " (inputs rounded to bf16; sums, weights, gradients and optimizer state float32)";
}

}  // namespace dtrain::runner
