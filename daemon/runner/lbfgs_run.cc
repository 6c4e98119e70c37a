#include "daemon/runner/lbfgs_run.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <vector>

#include "core/model/model.h"
#include "core/optim/vector_slices.h"
#include "core/train/batch_objective.h"
#include "daemon/runner/lbfgs_checkpoint.h"

namespace dtrain::runner {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kEvalChunk = 1000;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// The run's recording: metrics, evaluations, checkpoints and what observers see.
class LbfgsRecording {
 public:
  LbfgsRecording(const config::JobConfig& job, const JobData& data, const model::Model& model,
                 optim::Lbfgs& lbfgs, LbfgsEngine& engine, RunRecorder& recorder,
                 const RunOptions& options, const store::CheckpointData* resume)
      : job_(job),
        train_(config::TrainOptionsOf(job)),
        data_(data),
        model_(model),
        lbfgs_(lbfgs),
        engine_(engine),
        recorder_(recorder),
        options_(options),
        spec_(model::FormatModelSpec(model.spec())),
        classification_(data.spec.loss != model::LossType::kMeanSquaredError),
        early_stopping_(train_.early_stopping),
        last_saved_(resume != nullptr ? resume->step : -1) {
    if (resume != nullptr) early_stopping_.Restore(resume->early_stopping);
    if (data.eval.rows > 0) {
      eval_.emplace(model, data.eval, data.scaling, train::ObjectiveRows(data.eval.rows, 0, 0),
                    0.0f, kEvalChunk);
    }
  }

  RunProgress Progress() const {
    const optim::LbfgsState& s = lbfgs_.state();
    return {.step = s.iteration,
            .planned_steps = job_.lbfgs.max_iterations,
            .epoch = static_cast<std::uint64_t>(s.evaluations),
            .epochs = static_cast<double>(s.evaluations),
            .planned_epochs = 0,
            .params = model_.NumParams(),
            .iterations = true};
  }

  void Iteration(const optim::LbfgsIteration& it, double seconds) {
    const model::LossValue at = engine_.LastLoss();
    const double rows_d = static_cast<double>(engine_.rows());
    std::vector<train::MetricPoint> points{
        Point("train_loss", at.loss_sum / rows_d),
        Point("objective", it.loss),
        Point("grad_norm", it.gradient_norm),
        Point("step_length", it.step_length),
        Point("evaluations", it.evaluations),
        Point("samples_per_sec", rows_d * it.evaluations / std::max(seconds, 1e-9))};
    if (classification_) {
      points.push_back(Point("train_accuracy", static_cast<double>(at.correct) / rows_d));
    }
    for (const auto& [name, value] : engine_.TakeIterationMetrics()) {
      points.push_back(Point(name.c_str(), value));
    }
    Emit(points);
  }

  // Evaluates x on the held-out set (if any) and judges it (train::JudgeEvaluation): the stop it
  // asks for, if any; an evaluation that improves on the best so far makes x the job's best
  // model, where this process writes checkpoints.
  Result<std::optional<train::StopReason>> Evaluate() {
    const std::int64_t iteration = lbfgs_.state().iteration;
    last_eval_ = iteration;
    if (!eval_) return std::optional<train::StopReason>();
    if (Status s = engine_.Collect(false); !s.ok()) return s;
    const std::span<const float> x = engine_.Staging()[optim::kX];
    const model::LossValue v = eval_->Measure(x);
    const double rows = static_cast<double>(data_.eval.rows);
    latest_eval_ = train::EvalResult{v.loss_sum / rows, std::nan(""), data_.eval.rows};
    if (!classification_) {
      Emit({Point("eval_mse", latest_eval_->loss)});
    } else {
      latest_eval_->accuracy = static_cast<double>(v.correct) / rows;
      Emit(
          {Point("eval_loss", latest_eval_->loss), Point("eval_accuracy", latest_eval_->accuracy)});
    }
    Status kept = Status::Ok();
    const std::optional<train::StopReason> stop = train::JudgeEvaluation(
        train_, early_stopping_, iteration, latest_eval_->loss, latest_eval_->accuracy,
        [&](double value) { kept = KeepBest(x, value); });
    if (!kept.ok()) return kept;
    return stop;
  }
  const std::optional<train::EvalResult>& latest_eval() const { return latest_eval_; }
  bool EvaluatedNow() const { return last_eval_ == lbfgs_.state().iteration; }
  void Log(const std::string& line) {
    if (options_.observer != nullptr) options_.observer->OnEvent(line);
  }

  bool CheckpointDue() const {
    const config::CheckpointConfig& p = job_.checkpoint;
    const std::int64_t iteration = lbfgs_.state().iteration;
    return (p.every_steps > 0 && iteration % p.every_steps == 0) ||
           (p.every_seconds > 0 && Seconds(last_checkpoint_) >= p.every_seconds);
  }

  // Writes a checkpoint now, unless this iteration's is written already.
  Status Save() {
    const optim::LbfgsState& state = lbfgs_.state();
    if (!options_.checkpoints || state.iteration == last_saved_) return Status::Ok();
    if (Status s = engine_.Collect(true); !s.ok())
      return Status::Error("checkpoint failed: " + s.message());
    std::vector<float> scalars;
    store::CheckpointView view = ViewLbfgsCheckpoint(engine_.Staging(), job_.lbfgs.history, state,
                                                     job_.train.seed, spec_, &scalars);
    view.early_stopping = early_stopping_.state();
    const Status saved = recorder_.SaveCheckpoint(view);
    if (!saved.ok()) return Status::Error("checkpoint failed: " + saved.message());
    last_saved_ = state.iteration;
    last_checkpoint_ = Clock::now();
    if (options_.observer != nullptr) options_.observer->OnCheckpoint(Progress());
    return Status::Ok();
  }

  const train::EarlyStopping& early_stopping() const { return early_stopping_; }

 private:
  // `x`, judged `value` by the best-model metric, becomes the job's best model.
  Status KeepBest(std::span<const float> x, double value) {
    if (!options_.checkpoints) return Status::Ok();
    const optim::LbfgsState& state = lbfgs_.state();
    store::CheckpointView model;
    model.step = state.iteration;
    model.epoch = static_cast<std::uint64_t>(state.evaluations);
    model.seed = job_.train.seed;
    model.model_spec = spec_;
    model.params = x;
    model.early_stopping = early_stopping_.state();
    const store::BestModelInfo best{
        .step = state.iteration,
        .metric = std::string(train::EarlyStoppingMetricName(train_.early_stopping.metric)),
        .value = value};
    if (Status saved = recorder_.SaveBestModel(best, model); !saved.ok()) {
      return Status::Error("saving the best model failed: " + saved.message());
    }
    return Status::Ok();
  }
  train::MetricPoint Point(const char* name, double value) const {
    const optim::LbfgsState& s = lbfgs_.state();
    return {s.iteration, static_cast<double>(s.evaluations), name, value};
  }
  void Emit(const std::vector<train::MetricPoint>& points) {
    recorder_.RecordMetrics(points);
    if (options_.observer != nullptr) options_.observer->OnMetrics(Progress(), points);
  }

  const config::JobConfig& job_;
  const train::TrainOptions train_;  // the job's, judging its evaluations
  const JobData& data_;
  const model::Model& model_;
  optim::Lbfgs& lbfgs_;
  LbfgsEngine& engine_;
  RunRecorder& recorder_;
  const RunOptions& options_;
  const std::string spec_;
  const bool classification_;
  train::EarlyStopping early_stopping_;
  std::optional<train::BatchObjective> eval_;
  std::optional<train::EvalResult> latest_eval_;
  std::int64_t last_saved_;
  std::int64_t last_eval_ = -1;
  Clock::time_point last_checkpoint_ = Clock::now();
};

}  // namespace

std::string DescribeLbfgsEnd(const LbfgsRunResult& r) {
  const std::string after = " after " + std::to_string(r.iterations) + " iterations";
  switch (r.why) {
    case train::StopReason::kTargetReached:
      return "reached target accuracy" + after;
    case train::StopReason::kRequested:
      return "interrupted" + after;
    case train::StopReason::kEarlyStopped:
      return r.early_stopping.Describe(r.iterations);
    case train::StopReason::kCompleted:
      break;
  }
  if (r.stop == optim::LbfgsStop::kMaxIterations) return "stopped" + after + " (max_iterations)";
  return "converged (" + std::string(optim::LbfgsStopName(r.stop)) + ")" + after;
}

LocalLbfgsEngine::LocalLbfgsEngine(const config::JobConfig& job, const JobData& data,
                                   const model::Model& model)
    : objective_(model, data.train, data.scaling,
                 train::ObjectiveRows(data.train.rows, static_cast<std::size_t>(job.sample_rows),
                                      job.train.seed),
                 job.train.weight_decay, job.train.batch_size),
      vectors_(optim::LbfgsVectorCount(job.lbfgs.history), model.NumParams(),
               [this](std::span<const float> x, std::span<float> g) -> Result<double> {
                 return objective_.Evaluate(x, g);
               }) {}

Result<LbfgsRunResult> RunLbfgs(const config::JobConfig& job, const JobData& data,
                                RunRecorder& recorder, const RunOptions& options,
                                const store::CheckpointData* resume) {
  const model::Model model(data.spec);
  LocalLbfgsEngine engine(job, data, model);
  return RunLbfgs(job, data, model, engine, recorder, options, resume);
}

Result<LbfgsRunResult> RunLbfgs(const config::JobConfig& job, const JobData& data,
                                const model::Model& model, LbfgsEngine& engine,
                                RunRecorder& recorder, const RunOptions& options,
                                const store::CheckpointData* resume) {
  optim::Lbfgs lbfgs(job.lbfgs, engine.vectors());
  if (resume != nullptr) {
    optim::LbfgsState state;
    Status restored =
        RestoreLbfgsCheckpoint(*resume, job.lbfgs.history, job.train.seed,
                               model::FormatModelSpec(data.spec), engine.Staging(), &state);
    if (restored.ok()) restored = engine.Publish(true);
    if (restored.ok()) restored = lbfgs.Restore(state);
    if (!restored.ok()) return restored;
  } else {
    model.Init(engine.Staging()[optim::kX], job.train.seed);
    if (Status published = engine.Publish(false); !published.ok()) return published;
    if (Status started = lbfgs.Start(); !started.ok()) return started;
  }
  LbfgsRecording recording(job, data, model, lbfgs, engine, recorder, options, resume);
  if (options.observer != nullptr) {
    options.observer->OnStart(recording.Progress(), SubjectOf(data), resume != nullptr);
  }

  LbfgsRunResult result;
  while (lbfgs.Stopped() == optim::LbfgsStop::kNone) {
    const std::int64_t before = lbfgs.state().iteration;
    const auto started = Clock::now();
    Result<optim::LbfgsIteration> it = lbfgs.Iterate();
    for (const std::string& event : engine.TakeEvents()) recording.Log(event);
    if (!it.ok()) return it.status();
    if (it.value().iteration > before) {
      recording.Iteration(it.value(), Seconds(started));
      const std::int64_t every = job.train.eval_every;
      const bool due = every == 0 || it.value().iteration % every == 0 ||
                       it.value().stop != optim::LbfgsStop::kNone;
      if (due) {
        Result<std::optional<train::StopReason>> judged = recording.Evaluate();
        if (!judged.ok()) return judged.status();
        if (judged.value()) {
          result.why = *judged.value();
          break;
        }
      }
      if (recording.CheckpointDue()) {
        if (Status saved = recording.Save(); !saved.ok()) return saved;
      }
    }
    if (options.stop != nullptr && options.stop->load()) {
      result.why = train::StopReason::kRequested;
      break;
    }
  }
  if (!recording.EvaluatedNow() && result.why != train::StopReason::kRequested) {
    if (auto evaluated = recording.Evaluate(); !evaluated.ok()) return evaluated.status();
  }
  if (Status saved = recording.Save(); !saved.ok()) return saved;
  result.stop = lbfgs.Stopped();
  result.iterations = lbfgs.state().iteration;
  result.loss = lbfgs.state().loss;
  result.final_eval = recording.latest_eval();
  result.early_stopping = recording.early_stopping();
  return result;
}

}  // namespace dtrain::runner
