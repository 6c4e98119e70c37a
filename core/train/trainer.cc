#include "core/train/trainer.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/data/random.h"
#include "core/math/part_range.h"
#include "core/train/step_times.h"

namespace dtrain::train {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kAugmentStream = 0xA0;  // augmentation's draws, apart from dropout's

bool IsClassification(const model::ModelSpec& spec) {
  return spec.loss != model::LossType::kMeanSquaredError;
}

// Of a strategy's communication, the seconds its training thread waited for (all of them unless
// it overlaps).
double ExposedSeconds(const CommStats& stats) {
  return stats.overlapped ? stats.exposed_seconds : stats.comm_seconds;
}

// A compressing strategy's window: compression_seconds and wire_bytes (this worker's), and
// compression_ratio, what the uncompressed exchange would have sent over what was sent.
void AddCompressionPoints(std::int64_t step, double epochs, const CommStats& now,
                          const CommStats& window_start, std::vector<MetricPoint>& points) {
  const auto sent = static_cast<double>(now.bytes_sent - window_start.bytes_sent);
  const auto raw = static_cast<double>(now.uncompressed_bytes - window_start.uncompressed_bytes);
  points.push_back({step, epochs, "compression_seconds",
                    now.compression_seconds - window_start.compression_seconds});
  points.push_back({step, epochs, "wire_bytes", sent});
  if (sent > 0) points.push_back({step, epochs, "compression_ratio", raw / sent});
}

}  // namespace

bool IsDivergence(const Status& status) {
  return !status.ok() && status.message().starts_with(kDivergedPrefix);
}

Status JudgeTrainLoss(const TrainOptions& options, double loss, std::int64_t step,
                      std::string_view remedy) {
  if (!options.fail_on_divergence || std::isfinite(loss)) return Status::Ok();
  return Status::Error(std::string(kDivergedPrefix) + "train_loss became " +
                       (std::isnan(loss) ? "nan" : loss > 0 ? "inf" : "-inf") + " at step " +
                       std::to_string(step) + " (train.on_divergence = \"fail\"): " +
                       std::string(remedy));
}

int Trainer::Capacity(const TrainOptions& options) {
  int share = options.batch_size;
  if (options.sharding == data::ShardMode::kGlobalBatches && options.most_members > 0) {
    const std::size_t global = options.global_batch;
    // A step's rows over its members, owed ones included, stay at most the largest over the
    // membership sizes N of the fixed point T = G + b' ceil(T / N) (b' = min(b, N - 1) parts of
    // at most ceil(T / N) rows owed): T <= (N G + b' (N - 1)) / (N - b'). Above its own fixed
    // point a membership owes fewer rows each step, so no sequence of memberships exceeds the
    // largest; the fewest members share it out in the largest parts.
    std::size_t rows = global;
    const int fewest = std::max(options.fewest_members, 1);
    for (int n = fewest; n <= options.most_members; ++n) {
      const auto members = static_cast<std::size_t>(n);
      const auto b = static_cast<std::size_t>(std::min(options.backup_workers, n - 1));
      rows =
          std::max(rows, (members * global + b * (members - 1) + members - b - 1) / (members - b));
    }
    const auto least = static_cast<std::size_t>(fewest);
    share = std::max(share, static_cast<int>((rows + least - 1) / least));
  } else if (options.sharding == data::ShardMode::kGlobalBatches &&
             (options.global_batch > 0 || options.backup_workers > 0)) {
    const auto world = static_cast<std::size_t>(options.world_size);
    const std::size_t global = options.global_batch > 0
                                   ? options.global_batch
                                   : world * static_cast<std::size_t>(options.batch_size);
    // With backups the owed rows add to a step: at most b of N parts owed, each of at most S
    // rows, so S <= ceil((G + b S) / N) gives S <= ceil((G + N - 1) / (N - b)).
    const std::size_t taking = world - static_cast<std::size_t>(options.backup_workers);
    const std::size_t extra = options.backup_workers > 0 ? world - 1 : 0;
    share = std::max(share, static_cast<int>((global + extra + taking - 1) / taking));
  }
  return std::max(share, options.eval_batch_size);
}

int Trainer::EvalBatchRows(const model::ModelSpec& spec, int batch_size, int wanted) {
  constexpr std::size_t kEvalActivationBytes = std::size_t{32} << 20;
  const model::Model model(spec);
  // A workspace row: every layer's output and the two back-propagated gradients.
  std::size_t floats = 2 * model.MaxWidth();
  for (std::size_t l = 0; l < model.NumLayers(); ++l) floats += model.layer(l).output().Size();
  const std::size_t fit = kEvalActivationBytes / (floats * sizeof(float));
  const auto rows = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(wanted), fit));
  return std::max({rows, batch_size, 1});
}

Trainer::Trainer(const model::Model& model, TrainOptions options, const data::Dataset& train,
                 const data::Dataset* eval, data::Scaling scaling, Strategy& strategy)
    : Trainer(std::make_unique<model::LocalNetwork>(model.spec(), Capacity(options)), nullptr,
              std::move(options), train, eval, std::move(scaling), strategy) {}

Trainer::Trainer(model::Network& network, TrainOptions options, const data::Dataset& train,
                 const data::Dataset* eval, data::Scaling scaling, Strategy& strategy)
    : Trainer(nullptr, &network, std::move(options), train, eval, std::move(scaling), strategy) {}

Trainer::Trainer(std::unique_ptr<model::LocalNetwork> owned, model::Network* network,
                 TrainOptions options, const data::Dataset& train, const data::Dataset* eval,
                 data::Scaling scaling, Strategy& strategy)
    : owned_(std::move(owned)),
      network_(network != nullptr ? *network : *owned_),
      options_(std::move(options)),
      train_(train),
      eval_(eval),
      scaling_(std::move(scaling)),
      strategy_(strategy),
      sampler_(train.rows, static_cast<std::size_t>(options_.batch_size), options_.seed,
               options_.rank, options_.world_size, options_.sharding, options_.global_batch),
      param_buffer_(),
      params_(network_.StatisticRanges().empty() ? strategy.ParameterStorage(network_.NumParams())
                                                 : std::span<float>()),
      x_(static_cast<std::size_t>(Capacity(options_)) * train.features),
      y_(static_cast<std::size_t>(Capacity(options_))),
      grad_storage_(strategy.GradientStorage(network_.NumParams() + strategy.GradientTail())),
      grad_buffer_(grad_storage_.empty() ? network_.NumParams() + strategy.GradientTail() : 0),
      grad_((grad_storage_.empty() ? std::span<float>(grad_buffer_) : grad_storage_)
                .first(network_.NumParams())),
      early_stopping_(options_.early_stopping) {
  if (params_.empty()) {
    param_buffer_.resize(network_.NumParams());
    params_ = param_buffer_;
  }
  if (options_.schedule.total_steps == 0) options_.schedule.total_steps = PlannedSteps();
  if (options_.augment.enabled()) {
    const std::optional<data::ImageShape> image = ImageOf(network_.spec(), train_);
    assert(image.has_value());  // the job's check: augmentation needs images
    image_ = *image;
    augment_.resize(train.features);
  }
  statistics_.resize(model::RangesSize(network_.StatisticRanges()));
  if (math::ThreadTeam* team = network_.Team()) strategy_.ShareThreads(*team);
  if (PassExchange* overlap = strategy_.DuringPass()) {
    network_.WatchGradient([overlap](std::size_t begin) { overlap->Finished(begin); });
  }
}

std::optional<data::ImageShape> ImageOf(const model::ModelSpec& spec, const data::Dataset& set) {
  const model::Shape in = model::ModelInputShape(spec);
  if (!in.Flat()) return data::ImageShape{in.channels, in.height, in.width};
  if (set.image_height > 0) {
    return data::ImageShape{static_cast<int>(set.image_channels),
                            static_cast<int>(set.image_height), static_cast<int>(set.image_width)};
  }
  return std::nullopt;
}

std::int64_t PlannedSteps(const TrainOptions& options, std::size_t steps_per_epoch) {
  std::int64_t planned = std::numeric_limits<std::int64_t>::max();
  if (options.epochs > 0) planned = options.epochs * static_cast<std::int64_t>(steps_per_epoch);
  if (options.steps > 0) planned = std::min(planned, options.steps);
  return planned;
}

bool AdvanceStep(TrainPosition& position, std::size_t steps_per_epoch) {
  ++position.step;
  if (++position.batch < steps_per_epoch) return false;
  position.batch = 0;
  ++position.epoch;
  return true;
}

double EpochsDone(const TrainPosition& position, std::size_t steps_per_epoch) {
  return static_cast<double>(position.epoch) +
         static_cast<double>(position.batch) / static_cast<double>(steps_per_epoch);
}

void Trainer::InitParams() { network_.Init(params_, options_.seed); }

std::int64_t Trainer::PlannedSteps() const {
  return train::PlannedSteps(options_, sampler_.StepsPerEpoch());
}

double Trainer::Epochs() const { return train::EpochsDone(position_, sampler_.StepsPerEpoch()); }

void Trainer::GatherInSlices(std::span<const std::uint32_t> batch) {
  math::ThreadTeam* const team = network_.Team();
  if (team == nullptr) {
    data::GatherBatch(train_, scaling_, batch, x_.data(), y_.data());
    return;
  }
  // The network's slices are contiguous runs of rows, math::PartOf's: each thread converts the
  // rows its slice of the pass reads first, into its own core's cache.
  team->Run([&](int part) {
    const math::PartRange r = math::PartOf(batch.size(), team->size(), part);
    data::GatherBatch(train_, scaling_, batch.subspan(r.begin, r.end - r.begin),
                      x_.data() + r.begin * train_.features, y_.data() + r.begin);
  });
}

bool Trainer::Finished() const { return position_.step >= PlannedSteps(); }

bool Trainer::AdvancePastApplied() {
  const std::span<const std::uint64_t> masks = strategy_.TakenMasks();
  masks_.assign(masks.begin(), masks.end());
  last_batch_.masks = masks_;
  if (masks_.empty()) {
    owed_.clear();  // the step took every replica's rows (an elastic lone member owed some)
    return AdvanceStep(position_, sampler_.StepsPerEpoch());
  }
  assert(options_.sharding == data::ShardMode::kGlobalBatches);
  bool epoch_end = false;
  for (const std::uint64_t taken : masks_) {
    data::OwedAfter(owed_, sampler_.Fresh(position_.batch), options_.world_size, taken, next_owed_);
    owed_.swap(next_owed_);
    if (((taken >> options_.rank) & 1u) == 0) ++dropped_;
    epoch_end = AdvanceStep(position_, sampler_.StepsPerEpoch()) || epoch_end;
  }
  return epoch_end;
}

namespace {

// A partition's exchanges with the others over one log window: all of them, and the seconds of
// them spent inside the compute of a step (taken out of compute_seconds). Not used without
// model parallelism.
struct TrafficWindow {
  std::optional<model::PartitionTraffic> total;
  double in_compute = 0.0;

  // Collects what the network exchanged since the last call; `computing`: during a step's compute.
  void Collect(model::Network& network, bool computing) {
    const std::optional<model::PartitionTraffic> t = network.TakeTraffic();
    if (!t) return;
    if (!total) total.emplace();
    total->receiving_seconds += t->receiving_seconds;
    total->sending_seconds += t->sending_seconds;
    total->bytes_sent += t->bytes_sent;
    if (computing) in_compute += t->receiving_seconds + t->sending_seconds;
  }
};

}  // namespace

Result<StopReason> Trainer::Run(TrainListener& listener) {
  const bool classification = IsClassification(network_.spec());
  double window_loss = 0.0;
  long window_correct = 0;
  std::size_t window_rows = 0;
  auto window_start = Clock::now();
  double window_compute = 0.0;
  StepTimes window_steps;
  TrafficWindow window_traffic;
  CommStats window_comm = strategy_.Stats();
  bool stop_proposed = false;
  // Stops now when the strategy does not vote; otherwise waits for the agreed step.
  const auto propose = [&](StopReason reason) -> std::optional<StopReason> {
    if (stop_proposed) return std::nullopt;
    stop_proposed = true;
    if (strategy_.ProposeStop(reason)) return std::nullopt;
    return reason;
  };

  if (Status written = strategy_.ParametersWritten(); !written.ok()) return written;
  while (!Finished()) {
    window_traffic.Collect(network_, false);
    const auto compute_start = Clock::now();
    const std::span<const std::uint32_t> batch =
        sampler_.Batch(position_.epoch, position_.batch, owed_);
    const int rows = static_cast<int>(batch.size());
    const float lr = optim::LearningRate(options_.schedule, position_.step);
    const std::span<const model::ParamRange> statistics = network_.StatisticRanges();
    // The step inside the pass where the strategy allows it and no running statistics need
    // keeping from the optimizer.
    optim::Optimizer* const in_pass =
        rows > 0 && statistics.empty() ? strategy_.PassOptimizer() : nullptr;
    const bool log_now =
        (position_.step + 1) % options_.log_every == 0 || position_.step + 1 == PlannedSteps();
    // Nothing could take owed rows after the epoch's last step or the run's.
    const StepShare share{
        batch.size(), sampler_.StepRows(position_.batch) + owed_.size(),
        position_.batch + 1 == sampler_.StepsPerEpoch() || position_.step + 1 == PlannedSteps()};
    const std::int64_t step_before = position_.step;
    last_batch_ = {position_, batch, {}};
    listener.Taking(*this);
    PassExchange* const overlap = strategy_.DuringPass();
    if (overlap != nullptr) overlap->Start(position_.step, grad_, share, log_now);
    if (rows > 0) {
      GatherInSlices(batch);
      // Augmentation and dropout: pure functions of (seed, replica, step), so a resumed run
      // repeats them.
      const std::uint64_t step_seed =
          data::MixSeed(data::MixSeed(options_.seed, static_cast<std::uint64_t>(options_.rank)),
                        static_cast<std::uint64_t>(position_.step));
      data::AugmentBatch(options_.augment, image_, x_.data(), rows,
                         data::MixSeed(step_seed, kAugmentStream), augment_.data());
      network_.SetNoiseSeed(step_seed);
      const Result<model::LossValue> value =
          in_pass != nullptr
              ? network_.ForwardBackwardStep(params_.data(), x_.data(), y_.data(), rows,
                                             options_.weight_decay, grad_.data(), *in_pass, lr)
              : network_.ForwardBackward(params_.data(), x_.data(), y_.data(), rows,
                                         options_.weight_decay, grad_.data());
      if (!value.ok()) return value.status();
      window_loss += value.value().loss_sum;
      window_correct += value.value().correct;
      window_rows += batch.size();
    } else {
      std::fill(grad_.begin(), grad_.end(), 0.0f);  // still takes part in the step
    }

    double grad_norm = 0.0;
    if (log_now && overlap == nullptr) {  // else the exchange measures it (it is under way)
      const Result<double> squared = network_.SquaredNorm(grad_);
      if (!squared.ok()) return squared.status();
      grad_norm = std::sqrt(squared.value());
    }
    window_compute += std::chrono::duration<double>(Clock::now() - compute_start).count();
    window_traffic.Collect(network_, true);
    if (in_pass == nullptr) {
      model::GatherRanges(statistics, params_.data(), statistics_.data());
      Status applied = strategy_.Apply(position_.step, params_, grad_, lr, share);
      if (!applied.ok()) return applied;
      model::ScatterRanges(statistics, statistics_.data(), params_.data());
      if (log_now && overlap != nullptr) grad_norm = std::sqrt(overlap->SquaredNorm());
    }
    if (rows > 0) network_.UpdateStatistics(params_);
    std::optional<StopReason> stop = strategy_.AgreedStop();

    window_steps.Add(std::chrono::duration<double>(Clock::now() - compute_start).count());
    const bool epoch_end = AdvancePastApplied();

    if (log_now && window_rows > 0) {
      const double seconds = std::chrono::duration<double>(Clock::now() - window_start).count();
      const double rows_seen = static_cast<double>(window_rows);
      const Result<double> penalty =
          network_.WeightDecayPenalty(params_.data(), options_.weight_decay);
      if (!penalty.ok()) return penalty.status();
      std::vector<MetricPoint> points{
          {position_.step, Epochs(), "train_loss", window_loss / rows_seen + penalty.value()},
          {position_.step, Epochs(), "grad_norm", grad_norm},
          {position_.step, Epochs(), "samples_per_sec", seconds > 0 ? rows_seen / seconds : 0.0}};
      if (options_.learning_rate) points.push_back({position_.step, Epochs(), "lr", lr});
      points.push_back({position_.step, Epochs(), "step_seconds_p50", window_steps.Percentile(50)});
      points.push_back({position_.step, Epochs(), "step_seconds_p95", window_steps.Percentile(95)});
      if (options_.sharding == data::ShardMode::kGlobalBatches) {
        // The rows of the epoch the step just taken is in: all of it when that step ended it.
        // Rows owed to the next step are not taken yet.
        const std::size_t done = epoch_end ? sampler_.StepsPerEpoch() : position_.batch;
        points.push_back({position_.step, Epochs(), std::string(kEpochRows),
                          static_cast<double>(sampler_.RowsBefore(done) - owed_.size())});
      }
      if (options_.backup_workers > 0) {
        points.push_back({position_.step, Epochs(), std::string(kDroppedGradients),
                          static_cast<double>(dropped_)});
      }
      if (classification) {
        points.push_back({position_.step, Epochs(), "train_accuracy",
                          static_cast<double>(window_correct) / rows_seen});
      }
      const CommStats comm = strategy_.Stats();
      // A partition's compute excludes its waits on the other partitions, reported apart.
      window_traffic.Collect(network_, false);
      if (const std::optional<model::PartitionTraffic>& t = window_traffic.total) {
        window_compute = std::max(0.0, window_compute - window_traffic.in_compute);
        points.push_back({position_.step, Epochs(), "pipeline_idle_seconds", t->receiving_seconds});
        points.push_back({position_.step, Epochs(), "activation_send_seconds", t->sending_seconds});
        points.push_back(
            {position_.step, Epochs(), "activation_bytes", static_cast<double>(t->bytes_sent)});
      }
      if (options_.world_size > 1 || window_traffic.total) {
        points.push_back({position_.step, Epochs(), "compute_seconds", window_compute});
      }
      if (options_.world_size > 1) {
        points.push_back({position_.step, Epochs(), "comm_seconds",
                          comm.comm_seconds - window_comm.comm_seconds});
        points.push_back({position_.step, Epochs(), "wait_seconds",
                          comm.wait_seconds - window_comm.wait_seconds});
        points.push_back({position_.step, Epochs(), "exposed_comm_seconds",
                          ExposedSeconds(comm) - ExposedSeconds(window_comm)});
        points.push_back({position_.step, Epochs(), "bytes_sent",
                          static_cast<double>(comm.bytes_sent - window_comm.bytes_sent)});
      }
      // A job of several replicas says how many trained this step, one included (an elastic
      // job's last survivor), so the newest value is never an earlier membership's.
      if (options_.sharding == data::ShardMode::kGlobalBatches &&
          options_.global_batch > static_cast<std::size_t>(options_.batch_size)) {
        points.push_back(
            {position_.step, Epochs(), "workers_active", static_cast<double>(options_.world_size)});
      }
      if (comm.compressed) {
        AddCompressionPoints(position_.step, Epochs(), comm, window_comm, points);
      }
      listener.Record(points);  // a non-finite loss is recorded as what it is, then judged
      if (Status judged =
              JudgeTrainLoss(options_, points.front().value, position_.step,
                             "lower optimizer.lr, or bound the gradient with train.clip_norm");
          !judged.ok()) {
        return judged;
      }
      window_comm = comm;
      window_compute = 0.0;
      window_steps.Clear();
      window_traffic = {};
      window_loss = 0.0;
      window_correct = 0;
      window_rows = 0;
      window_start = Clock::now();
    }

    const bool eval_now =
        eval_ != nullptr &&
        (options_.eval_every > 0
             // A replica that skipped steps (backup workers) evaluates where it passed one due.
             ? position_.step / options_.eval_every != step_before / options_.eval_every
             : epoch_end);
    // What this process wants, as a StopVote (0: nothing). The partitions of a replica (if any)
    // agree first, on the most urgent; replicas then vote through the strategy.
    std::uint32_t wanted = 0;
    if (Finished()) {  // what is evaluated last is what the job hands out
      model::GatherRanges(statistics, params_.data(), statistics_.data());
      if (Status settled = strategy_.Settle(params_); !settled.ok()) return settled;
      model::ScatterRanges(statistics, statistics_.data(), params_.data());
      if (log_now && overlap != nullptr) grad_norm = std::sqrt(overlap->SquaredNorm());
    }
    if (eval_now || (eval_ != nullptr && Finished())) {
      const Result<EvalResult> result = Evaluate(*eval_);
      if (!result.ok()) return result.status();
      EmitEval(listener, result.value());
      wanted = StopVote(JudgeEvaluation(options_, early_stopping_, position_.step,
                                        result.value().loss, result.value().accuracy,
                                        [&](double value) { listener.Improved(*this, value); }));
    }
    if (!listener.AfterStep(*this)) wanted = StopVote(StopReason::kRequested);
    const Result<int> agreed = network_.AgreeStop(static_cast<int>(wanted));
    if (!agreed.ok()) return agreed.status();
    if (agreed.value() > 0 && !stop) {
      stop = propose(*FromStopVote(static_cast<std::uint32_t>(agreed.value())));
    }
    if (stop) return *stop;
  }
  return StopReason::kCompleted;
}

Result<EvalResult> Trainer::Evaluate(const data::Dataset& set) {
  EvalResult result;
  double loss_sum = 0.0;
  long correct = 0;
  const auto chunk = static_cast<std::size_t>(options_.eval_batch_size);
  eval_indices_.resize(chunk);
  for (std::size_t begin = 0; begin < set.rows; begin += chunk) {
    const std::size_t rows = std::min(chunk, set.rows - begin);
    std::iota(eval_indices_.begin(), eval_indices_.begin() + static_cast<long>(rows),
              static_cast<std::uint32_t>(begin));
    data::GatherBatch(set, scaling_, {eval_indices_.data(), rows}, x_.data(), y_.data());
    const Result<model::LossValue> v =
        network_.Evaluate(params_.data(), x_.data(), y_.data(), static_cast<int>(rows));
    if (!v.ok()) return v.status();
    loss_sum += v.value().loss_sum;
    correct += v.value().correct;
  }
  result.rows = set.rows;
  if (set.rows == 0) return result;
  result.loss = loss_sum / static_cast<double>(set.rows);
  result.accuracy = IsClassification(network_.spec())
                        ? static_cast<double>(correct) / static_cast<double>(set.rows)
                        : std::numeric_limits<double>::quiet_NaN();
  return result;
}

std::optional<StopReason> JudgeEvaluation(const TrainOptions& options, EarlyStopping& early,
                                          std::int64_t step, double loss, double accuracy,
                                          const std::function<void(double)>& improved) {
  bool stop_early = false;
  if (options.early_stopping.enabled() || options.keep_best) {
    const double value =
        options.early_stopping.metric == EarlyStoppingMetric::kEvalAccuracy ? accuracy : loss;
    const EarlyStopping::Verdict verdict = early.Observe(value, step);
    stop_early = verdict == EarlyStopping::Verdict::kStop;
    if (verdict == EarlyStopping::Verdict::kImproved && options.keep_best) improved(value);
  }
  if (options.target_accuracy > 0.0 && accuracy >= options.target_accuracy) {
    return StopReason::kTargetReached;
  }
  if (stop_early) return StopReason::kEarlyStopped;
  return std::nullopt;
}

void Trainer::EmitEval(TrainListener& listener, const EvalResult& result) {
  std::vector<MetricPoint> points;
  if (IsClassification(network_.spec())) {
    points.push_back({position_.step, Epochs(), "eval_loss", result.loss});
    points.push_back({position_.step, Epochs(), "eval_accuracy", result.accuracy});
  } else {
    points.push_back({position_.step, Epochs(), "eval_mse", result.loss});
  }
  listener.Record(points);
}

}  // namespace dtrain::train
