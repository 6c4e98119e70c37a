#include "core/sparse/sparse_trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/optim/schedule.h"
#include "core/train/auc.h"

namespace dtrain::sparse {
namespace {

using Clock = std::chrono::steady_clock;

// Bytes one key moves each way: its key and its slot (pull) or its gradient (push).
double BytesPerKey(const SparseModel& model) {
  return static_cast<double>(sizeof(std::uint32_t) + sizeof(float) * model.SlotWidth());
}

}  // namespace

Status LocalSparseParameters::Pull(std::span<const std::uint32_t> keys, float* slots,
                                   float* globals) {
  table_.Pull(keys, slots);
  std::copy_n(table_.globals(), table_.model().GlobalWidth(), globals);
  return Status::Ok();
}

Status LocalSparseParameters::Push(std::span<const std::uint32_t> keys, const float* grad_slots,
                                   const float* grad_globals, float lr, std::size_t /*rows*/) {
  table_.Push(keys, grad_slots, grad_globals, lr);
  return Status::Ok();
}

Status LocalSparseParameters::Lookup(std::span<const std::uint32_t> keys, float* slots,
                                     float* globals) {
  const std::size_t width = table_.model().SlotWidth();
  for (const std::uint32_t key : keys) {
    const float* slot = table_.Find(key);
    if (slot != nullptr) {
      std::copy_n(slot, width, slots);
    } else {
      std::fill_n(slots, width, 0.0f);
    }
    slots += width;
  }
  std::copy_n(table_.globals(), table_.model().GlobalWidth(), globals);
  return Status::Ok();
}

Result<std::vector<float>> ScoreRows(const SparseModel& model, SparseParameters& params,
                                     const data::SparseRows& rows, std::size_t chunk) {
  const auto outputs = static_cast<std::size_t>(model.Outputs());
  std::vector<float> scores(rows.rows() * outputs);
  std::vector<std::uint32_t> indices(std::min(chunk, rows.rows()));
  std::vector<float> slots, globals(model.GlobalWidth());
  SparseBatch batch;
  for (std::size_t begin = 0; begin < rows.rows(); begin += chunk) {
    const std::size_t n = std::min(chunk, rows.rows() - begin);
    std::iota(indices.begin(), indices.begin() + static_cast<std::ptrdiff_t>(n),
              static_cast<std::uint32_t>(begin));
    FillSparseBatch(rows, {indices.data(), n}, &batch);
    slots.resize(batch.keys.size() * model.SlotWidth());
    if (Status s = params.Lookup(batch.keys, slots.data(), globals.data()); !s.ok()) return s;
    model.Forward(batch, slots.data(), globals.data(), scores.data() + begin * outputs);
  }
  return scores;
}

SparseEvalResult MeasureScores(const SparseModel& model, std::span<const float> scores,
                               std::span<const float> labels) {
  SparseEvalResult result;
  result.rows = labels.size();
  result.auc = std::numeric_limits<double>::quiet_NaN();
  if (labels.empty()) return result;
  const int rows = static_cast<int>(labels.size());
  const model::LossType loss = model.spec().type == SparseModelType::kSoftmax
                                   ? model::LossType::kSoftmaxCrossEntropy
                                   : model::LossType::kBinaryCrossEntropy;
  const model::LossValue v =
      model::ComputeLoss(loss, scores.data(), labels.data(), rows, model.Outputs(), nullptr);
  result.loss = v.loss_sum / rows;
  result.accuracy = static_cast<double>(v.correct) / rows;
  if (model.Outputs() == 1) result.auc = train::Auc(scores, labels);
  return result;
}

SparseTrainer::SparseTrainer(const SparseModel& model, train::TrainOptions options,
                             const data::SparseRows& train, const data::SparseRows* eval,
                             SparseParameters& params)
    : SparseTrainer(model, options,
                    std::make_unique<SampledBatches>(
                        train, static_cast<std::size_t>(options.batch_size), options.seed,
                        options.rank, options.world_size, ReplicaShardMode(params.Collective())),
                    nullptr, eval, params) {}

SparseTrainer::SparseTrainer(const SparseModel& model, train::TrainOptions options,
                             SparseBatchSource& batches, const data::SparseRows* eval,
                             SparseParameters& params)
    : SparseTrainer(model, std::move(options), nullptr, &batches, eval, params) {}

SparseTrainer::SparseTrainer(const SparseModel& model, train::TrainOptions options,
                             std::unique_ptr<SparseBatchSource> owned, SparseBatchSource* batches,
                             const data::SparseRows* eval, SparseParameters& params)
    : model_(model),
      options_(std::move(options)),
      owned_batches_(std::move(owned)),
      batches_(batches != nullptr ? *batches : *owned_batches_),
      eval_(eval != nullptr && eval->rows() > 0 ? eval : nullptr),
      params_(params),
      early_stopping_(options_.early_stopping),
      globals_(model.GlobalWidth()),
      grad_globals_(model.GlobalWidth()) {
  if (options_.schedule.total_steps == 0) options_.schedule.total_steps = PlannedSteps();
}

std::int64_t SparseTrainer::PlannedSteps() const {
  return train::PlannedSteps(options_, batches_.StepsPerEpoch());
}

double SparseTrainer::Epochs() const {
  return train::EpochsDone(position_, batches_.StepsPerEpoch());
}

Result<SparseEvalResult> SparseTrainer::Evaluate(const data::SparseRows& rows) {
  Result<std::vector<float>> scores =
      ScoreRows(model_, params_, rows, static_cast<std::size_t>(options_.eval_batch_size));
  if (!scores.ok()) return scores.status();
  return MeasureScores(model_, scores.value(), rows.labels);
}

std::vector<train::MetricPoint> SparseTrainer::EvalPoints(const SparseEvalResult& r) const {
  std::vector<train::MetricPoint> points{{position_.step, Epochs(), "eval_loss", r.loss},
                                         {position_.step, Epochs(), "eval_accuracy", r.accuracy}};
  if (model_.Outputs() == 1) points.push_back({position_.step, Epochs(), "eval_auc", r.auc});
  return points;
}

Result<train::StopReason> SparseTrainer::Run(SparseListener& listener) {
  const std::size_t width = model_.SlotWidth();
  double window_loss = 0.0, window_keys = 0.0;
  long window_correct = 0;
  std::size_t window_rows = 0, window_steps = 0;
  auto window_start = Clock::now();
  train::CommStats window_comm = params_.Stats();
  while (!Finished()) {
    if (Status s = batches_.Fill(position_.epoch, position_.batch, &batch_); !s.ok()) return s;
    const auto rows = static_cast<std::size_t>(batch_.rows());
    const float lr = optim::LearningRate(options_.schedule, position_.step);
    if (rows > 0) {
      const std::size_t floats = batch_.keys.size() * width;
      slots_.resize(floats);
      grad_slots_.resize(floats);
      if (Status s = params_.Pull(batch_.keys, slots_.data(), globals_.data()); !s.ok()) return s;
      const model::LossValue v = model_.ForwardBackward(batch_, slots_.data(), globals_.data(),
                                                        grad_slots_.data(), grad_globals_.data());
      window_loss += v.loss_sum;
      window_correct += v.correct;
      window_rows += rows;
      window_keys += static_cast<double>(batch_.keys.size());
    } else {  // a collective step this replica has no rows for: it pushes nothing
      std::fill(grad_globals_.begin(), grad_globals_.end(), 0.0f);
    }
    if (rows > 0 || params_.Collective()) {
      if (Status s = params_.Push(batch_.keys, grad_slots_.data(), grad_globals_.data(), lr, rows);
          !s.ok()) {
        return s;
      }
    }
    ++window_steps;
    const bool epoch_end = train::AdvanceStep(position_, batches_.StepsPerEpoch());

    if ((position_.step % options_.log_every == 0 || Finished()) && window_rows > 0) {
      const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
      const double window = static_cast<double>(window_rows);
      const double keys = window_keys / static_cast<double>(window_steps);
      std::vector<train::MetricPoint> points{
          {position_.step, Epochs(), "train_loss", window_loss / window},
          {position_.step, Epochs(), "train_accuracy",
           static_cast<double>(window_correct) / window},
          {position_.step, Epochs(), "samples_per_sec", seconds > 0 ? window / seconds : 0.0},
          {position_.step, Epochs(), "keys_per_step", keys},
          {position_.step, Epochs(), "bytes_per_step", 2.0 * keys * BytesPerKey(model_)},
          {position_.step, Epochs(), "model_keys", static_cast<double>(params_.KeyCount())}};
      if (options_.learning_rate) points.push_back({position_.step, Epochs(), "lr", lr});
      const train::CommStats comm = params_.Stats();
      if (comm.bytes_sent > 0) {
        points.push_back({position_.step, Epochs(), "bytes_sent",
                          static_cast<double>(comm.bytes_sent - window_comm.bytes_sent)});
        points.push_back({position_.step, Epochs(), "bytes_received",
                          static_cast<double>(comm.bytes_received - window_comm.bytes_received)});
      }
      window_comm = comm;
      listener.Record(points);  // a non-finite loss is recorded as what it is, then judged
      if (Status judged = train::JudgeTrainLoss(options_, points.front().value, position_.step,
                                                "lower optimizer.lr or the optimizer's alpha");
          !judged.ok()) {
        return judged;
      }
      window_loss = window_keys = 0.0;
      window_correct = 0;
      window_rows = window_steps = 0;
      window_start = Clock::now();
    }

    std::optional<train::StopReason> wanted;
    const bool eval_now =
        options_.eval_every > 0 ? position_.step % options_.eval_every == 0 : epoch_end;
    if (eval_ != nullptr && (eval_now || Finished())) {
      const Result<SparseEvalResult> result = Evaluate(*eval_);
      if (!result.ok()) return result.status();
      listener.Record(EvalPoints(result.value()));
      wanted = train::JudgeEvaluation(options_, early_stopping_, position_.step,
                                      result.value().loss, result.value().accuracy,
                                      [&](double value) { listener.Improved(*this, value); });
    }
    if (const std::optional<train::StopReason> agreed = params_.AgreedStop()) return *agreed;
    if (!listener.AfterStep(*this)) wanted = train::StopReason::kRequested;
    if (wanted && !params_.ProposeStop(*wanted)) return *wanted;
  }
  return train::StopReason::kCompleted;
}

}  // namespace dtrain::sparse
