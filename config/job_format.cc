// FormatResolvedJob: a JobConfig back to job-file TOML, every key written out, or (for people)
// only the keys that apply to the job's format, model, optimizer and mode.
#include <string>
#include <utility>

#include "config/compression_section.h"
#include "config/early_stopping_key.h"
#include "config/hierarchy_key.h"
#include "config/job_file.h"
#include "config/layer_list.h"
#include "config/mode_traits.h"
#include "config/slurm_job.h"
#include "config/sparse_job.h"
#include "config/toml_text.h"

namespace dtrain::config {
namespace {

// Which keys to write: all of them, or only those that apply.
struct Shown {
  bool all;
  bool operator()(bool applies) const { return all || applies; }
};

void WriteData(const DataConfig& d, Shown show, TomlWriter& w) {
  const bool idx = d.format == DataFormat::kIdx, csv = d.format == DataFormat::kCsv;
  const bool libsvm = d.format == DataFormat::kLibsvm, npy = d.format == DataFormat::kNpy;
  const bool synthetic = d.format == DataFormat::kSynthetic;
  w.Section("data");
  w.String("format", DataFormatName(d.format));
  if (show(!synthetic)) w.Path("train", d.train);
  if (show(idx || npy)) w.Path("train_labels", d.train_labels);
  if (show(!synthetic)) w.Path("test", d.test);
  if (show(idx || npy)) w.Path("test_labels", d.test_labels);
  if (npy) {  // refused with other formats, so never written for them
    w.String("features_array", d.features_array);
    w.String("labels_array", d.labels_array);
  }
  if (show(csv)) {
    w.Bool("header", d.header);
    if (d.label_column.empty()) {
      w.Int("label_index", d.label_index);
    } else {
      w.String("label_column", d.label_column);
    }
    w.String("delimiter", std::string(1, d.delimiter));
  }
  if (show(libsvm)) w.Int("features", d.features);
  if (show(libsvm)) w.Bool("sparse", d.sparse);
  if (d.hash_bits > 0) w.Int("hash_bits", d.hash_bits);
  if (d.stream) {
    w.Bool("stream", d.stream);
    w.Double("stream_block_mib", d.stream_block_mib);
  }
  if (d.standardize) {
    w.String("scale", "standardize");
  } else {
    w.Float("scale", d.scale);
  }
  w.Double("validation_fraction", d.validation_fraction);
  if (show(synthetic)) {
    w.String("synthetic", SyntheticKindName(d.synthetic));
    w.Int("rows", d.rows);
    w.Int("test_rows", d.test_rows);
    w.Int("classes", d.classes);
    w.Float("noise", d.noise);
    w.Unsigned("seed", d.data_seed);
  }
  if (show(d.format != DataFormat::kLibsvm)) {
    w.Int("augment_crop", d.augment.crop_padding);
    w.Bool("augment_flip", d.augment.flip);
  }
}

void WriteModel(const model::ModelSpec& m, TomlWriter& w) {
  w.Section("model");
  w.String("type", model::ModelTypeName(m.type));
  const bool listed = m.type == model::ModelType::kSequential;
  if (!listed) {
    w.IntArray("hidden", m.hidden);
    w.String("activation", model::ActivationName(m.activation));
  }
  w.String("loss", model::LossName(m.loss));
  w.String("init", model::InitName(m.init));
  if (!listed) w.Int("inputs", m.inputs);
  w.Int("outputs", m.outputs);
  if (listed) internal::WriteLayerList(m, w);
}

void WriteTrain(const JobConfig& job, TomlWriter& w) {
  const train::TrainOptions& t = job.train;
  w.Section("train");
  w.Int("epochs", t.epochs);
  w.Int("steps", t.steps);
  w.Int("batch_size", t.batch_size);
  w.Unsigned("seed", t.seed);
  w.Int("threads", job.threads);
  w.String("precision", math::PrecisionName(job.precision));
  w.Unsigned("memory_limit", job.memory_limit);
  w.Int("eval_every", t.eval_every);
  w.Int("log_every", t.log_every);
  w.Double("target_accuracy", t.target_accuracy);
  internal::WriteEarlyStopping(t.early_stopping, w);
  w.String("on_divergence", t.fail_on_divergence ? "fail" : "continue");
  w.Float("weight_decay", t.weight_decay);
  w.Float("clip_norm", job.clip_norm);
}

void WriteOptimizer(const JobConfig& job, Shown show, TomlWriter& w) {
  using optim::OptimizerType;
  const optim::OptimizerOptions& o = job.optimizer;
  const optim::ScheduleOptions& s = job.train.schedule;
  const bool lbfgs = o.type == OptimizerType::kLbfgs, ftrl = o.type == OptimizerType::kFtrl;
  const bool adam = o.type == OptimizerType::kAdam, adagrad = o.type == OptimizerType::kAdagrad;
  const bool stepped = !lbfgs && !ftrl;  // a learning rate and its schedule
  w.Section("optimizer");
  w.String("type", optim::OptimizerTypeName(o.type));
  if (show(stepped)) w.Float("lr", s.lr);
  if (show(o.type == OptimizerType::kMomentum)) {
    w.Float("momentum", o.momentum);
    w.Bool("nesterov", o.nesterov);
  }
  if (show(adam)) {
    w.Float("beta1", o.beta1);
    w.Float("beta2", o.beta2);
  }
  if (show(adam || adagrad)) w.Float("eps", o.eps);
  if (show(adagrad)) w.Float("initial_accumulator", o.initial_accumulator);
  if (show(ftrl)) {
    w.Float("alpha", o.alpha);
    w.Float("beta", o.beta);
    w.Float("l1", o.l1);
    w.Float("l2", o.l2);
  }
  if (show(lbfgs)) {
    w.Int("history", job.lbfgs.history);
    w.Int("max_iterations", job.lbfgs.max_iterations);
    w.Double("gradient_tolerance", job.lbfgs.gradient_tolerance);
    w.Double("loss_tolerance", job.lbfgs.loss_tolerance);
    w.Int("max_evaluations", job.lbfgs.max_evaluations);
    w.Int("sample_rows", job.sample_rows);
  }
  if (show(stepped)) {
    w.String("schedule", optim::ScheduleTypeName(s.type));
    w.Int("warmup_steps", s.warmup_steps);
  }
  if (show(stepped && s.type == optim::ScheduleType::kStep)) {
    w.Int("step_size", s.step_size);
    w.Float("gamma", s.gamma);
  }
  if (show(stepped && s.type != optim::ScheduleType::kConstant)) w.Float("min_lr", s.min_lr);
}

void WriteCluster(const ClusterConfig& c, Shown show, TomlWriter& w) {
  const bool several = c.workers > 1;
  const bool partitioned = c.model_parallel > 1;
  const unsigned keys = TraitsOf(c.mode).keys;
  const auto own = [keys](ModeKeys k) { return (keys & k) != 0; };
  w.Section("cluster");
  w.Int("workers", c.workers);
  w.String("mode", ClusterModeName(c.mode));
  if (show(own(kAllReduceKey))) w.String("allreduce", AllReduceName(c.allreduce));
  if (show(several || partitioned)) {
    w.String("transport", TransportName(c.transport));
    w.Bool("checksum", c.checksum);
  }
  if (show(own(kServersKey) && c.Servers() > 0)) w.Int("servers", c.servers);
  if (show(own(kDownpourKeys))) {
    w.Int("push_every", c.push_every);
    w.Int("fetch_every", c.fetch_every);
    w.Int("max_staleness", c.max_staleness);
  }
  if (show(own(kAveragingKeys))) {
    w.Int("average_every", c.average_every);
    w.Bool("average_optimizer", c.average_optimizer);
  }
  if (show(own(kWorkUnitKeys))) {
    w.Int("work_units", c.work_units);
    w.Double("backup_after", c.backup_after);
  }
  if (show(several)) w.String("lr_scaling", LrScalingName(c.lr_scaling));
  if (show(several || partitioned)) {
    w.Double("timeout_seconds", c.timeout_seconds);
    w.Double("heartbeat_timeout", c.heartbeat_timeout);
    if (c.scheduler == Scheduler::kDaemon) w.String("placement", PlacementPolicyName(c.placement));
  }
  if (show(c.scheduler != Scheduler::kDaemon)) w.String("scheduler", SchedulerName(c.scheduler));
  if (!c.hosts.empty()) w.StringArray("hosts", c.hosts);
  w.Int("model_parallel", c.model_parallel);
  if (show(partitioned)) {
    w.String("partition", model::PartitionKindName(c.partition));
    w.Int("micro_batches", c.micro_batches);
  }
  if (show(internal::CompressionApplies(c))) internal::WriteCompression(c.compression, w);
  if (show(c.OverlapApplies())) w.Int("bucket_bytes", static_cast<std::int64_t>(c.bucket_bytes));
  // Only where they apply, even with every key shown: elsewhere the keys are refused.
  if (c.SumsOnTheRing()) internal::WriteHierarchy(c.hierarchy, w);
  if (c.BackupWorkersApply()) w.Int("backup_workers", c.backup_workers);
  // Likewise; 0 (not elastic) is no value a job file may give.
  if (c.ElasticApplies()) {
    if (c.min_workers > 0) {
      w.Int("min_workers", c.min_workers);
    } else if (several) {
      w.Comment("min_workers: not set, so a lost replica restarts the attempt from its checkpoint");
    }
    if (c.max_workers > 0) w.Int("max_workers", c.max_workers);
  }
}

}  // namespace

std::string FormatResolvedJob(const JobConfig& job, ResolvedKeys keys) {
  const Shown show{keys == ResolvedKeys::kAll};
  TomlWriter w;
  w.Comment("dtrain job resolved from " + TomlString(job.source_path) +
            (show.all ? ": every key, with its value."
                      : ": every key that applies to it, with its value."));
  w.String("name", job.name);
  w.Int("priority", job.priority);
  // Written only when there are some: a job resolved before tags existed reads the same.
  if (!job.tags.empty()) w.StringArray("tags", job.tags);
  WriteData(job.data, show, w);
  if (job.data.sparse) {
    internal::WriteSparseModel(job.sparse_model, w);
  } else {
    WriteModel(job.model, w);
  }
  WriteTrain(job, w);
  WriteOptimizer(job, show, w);
  WriteCluster(job.cluster, show, w);
  if (job.cluster.scheduler == Scheduler::kSlurm) internal::WriteSlurm(job.slurm, w);
  w.Section("checkpoint");
  w.Int("every_steps", job.checkpoint.every_steps);
  w.Double("every_seconds", job.checkpoint.every_seconds);
  w.Int("keep", job.checkpoint.keep);
  internal::WriteKeepBest(job.checkpoint, w);
  w.Section("restart");
  if (job.max_restarts < 0) {
    w.Comment("max_restarts: not set, so the daemon's default applies");
  } else {
    w.Int("max_restarts", job.max_restarts);
  }
  return std::move(w).Take();
}

}  // namespace dtrain::config
