#include "daemon/runner/final_class_report.h"

#include <new>

#include "core/train/class_report.h"
#include "core/train/inference.h"

namespace dtrain::runner {

Status RecordClassReport(const JobData& data, const train::Trainer& trainer,
                         RunRecorder& recorder) {
  const model::ModelSpec& spec = data.spec;
  if (spec.loss == model::LossType::kMeanSquaredError || data.eval.rows == 0) return Status::Ok();
  const int classes = spec.loss == model::LossType::kBinaryCrossEntropy ? 2 : spec.outputs;
  if (classes > train::kMaxReportClasses) return Status::Ok();
  try {
    Result<train::InferenceResult> ran = train::RunInference(
        spec, data.scaling, trainer.params(), data.eval, trainer.options().eval_batch_size);
    if (!ran.ok()) return ran.status();
    Result<train::ClassReport> report =
        train::ClassReportOf(ran.value().labels, ran.value().predictions, classes);
    if (!report.ok()) return report.status();
    return recorder.SaveClassReport(trainer.position().step, report.value());
  } catch (const std::bad_alloc&) {
    return Status::Error("out of memory running the model over the " + data.eval_name +
                         " set once more");
  }
}

}  // namespace dtrain::runner
