// RecordClassReport: the per-class report (core/train/class_report.h) of a job's final
// evaluation, made where that evaluation runs — the process that holds the whole trained model
// (`dtrain run`'s, or replica 0 of a daemon's job) — and handed to its RunRecorder, which keeps
// it with the job (Store::SaveClassReport). It runs the trainer's final parameters over the
// held-out set exactly as `dtrain eval --per-class` runs the exported model (train::RunInference,
// the trainer's eval_batch_size rows a pass), so the two agree.
//
//   if (Status s = RecordClassReport(data, trainer, recorder); !s.ok()) ... (a log line: the
//                                                                            job still succeeds)
//
// Nothing is made (Ok) for a regression model, a job without held-out rows, or a model of more
// than train::kMaxReportClasses classes. On the training thread, after the run's last step.
#pragma once

#include "core/status.h"
#include "core/train/trainer.h"
#include "daemon/runner/job_data.h"
#include "daemon/runner/recorder.h"

namespace dtrain::runner {

Status RecordClassReport(const JobData& data, const train::Trainer& trainer, RunRecorder& recorder);

}  // namespace dtrain::runner
