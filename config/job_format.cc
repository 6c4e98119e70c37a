// FormatResolvedJob: a JobConfig back to job-file TOML, every key written out.
#include <string>
#include <utility>

#include "config/job_file.h"
#include "config/layer_list.h"
#include "config/sparse_job.h"
#include "config/toml_text.h"

namespace dtrain::config {
namespace {

void WriteData(const DataConfig& d, TomlWriter& w) {
  w.Section("data");
  w.String("format", DataFormatName(d.format));
  w.Path("train", d.train);
  w.Path("train_labels", d.train_labels);
  w.Path("test", d.test);
  w.Path("test_labels", d.test_labels);
  w.Bool("header", d.header);
  if (d.label_column.empty()) {
    w.Int("label_index", d.label_index);
  } else {
    w.String("label_column", d.label_column);
  }
  w.String("delimiter", std::string(1, d.delimiter));
  w.Int("features", d.features);
  w.Bool("sparse", d.sparse);
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
  w.String("synthetic", SyntheticKindName(d.synthetic));
  w.Int("rows", d.rows);
  w.Int("test_rows", d.test_rows);
  w.Int("classes", d.classes);
  w.Float("noise", d.noise);
  w.Unsigned("seed", d.data_seed);
  w.Int("augment_crop", d.augment.crop_padding);
  w.Bool("augment_flip", d.augment.flip);
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
  w.Unsigned("memory_limit", job.memory_limit);
  w.Int("eval_every", t.eval_every);
  w.Int("log_every", t.log_every);
  w.Double("target_accuracy", t.target_accuracy);
  w.Float("weight_decay", t.weight_decay);
  w.Float("clip_norm", job.clip_norm);
}

void WriteOptimizer(const JobConfig& job, TomlWriter& w) {
  const optim::OptimizerOptions& o = job.optimizer;
  const optim::ScheduleOptions& s = job.train.schedule;
  w.Section("optimizer");
  w.String("type", optim::OptimizerTypeName(o.type));
  w.Float("lr", s.lr);
  w.Float("momentum", o.momentum);
  w.Bool("nesterov", o.nesterov);
  w.Float("beta1", o.beta1);
  w.Float("beta2", o.beta2);
  w.Float("eps", o.eps);
  w.Float("initial_accumulator", o.initial_accumulator);
  w.Float("alpha", o.alpha);
  w.Float("beta", o.beta);
  w.Float("l1", o.l1);
  w.Float("l2", o.l2);
  w.Int("history", job.lbfgs.history);
  w.Int("max_iterations", job.lbfgs.max_iterations);
  w.Double("gradient_tolerance", job.lbfgs.gradient_tolerance);
  w.Double("loss_tolerance", job.lbfgs.loss_tolerance);
  w.Int("max_evaluations", job.lbfgs.max_evaluations);
  w.Int("sample_rows", job.sample_rows);
  w.String("schedule", optim::ScheduleTypeName(s.type));
  w.Int("warmup_steps", s.warmup_steps);
  w.Int("step_size", s.step_size);
  w.Float("gamma", s.gamma);
  w.Float("min_lr", s.min_lr);
}

}  // namespace

std::string FormatResolvedJob(const JobConfig& job) {
  TomlWriter w;
  w.Comment("dtrain job resolved from " + TomlString(job.source_path) +
            ": every key, with its value.");
  w.String("name", job.name);
  w.Int("priority", job.priority);
  WriteData(job.data, w);
  if (job.data.sparse) {
    internal::WriteSparseModel(job.sparse_model, w);
  } else {
    WriteModel(job.model, w);
  }
  WriteTrain(job, w);
  WriteOptimizer(job, w);
  w.Section("cluster");
  w.Int("workers", job.cluster.workers);
  w.String("mode", ClusterModeName(job.cluster.mode));
  w.String("allreduce", AllReduceName(job.cluster.allreduce));
  w.String("transport", TransportName(job.cluster.transport));
  w.Bool("checksum", job.cluster.checksum);
  w.Int("servers", job.cluster.servers);
  w.Int("push_every", job.cluster.push_every);
  w.Int("fetch_every", job.cluster.fetch_every);
  w.Int("max_staleness", job.cluster.max_staleness);
  w.Int("average_every", job.cluster.average_every);
  w.Bool("average_optimizer", job.cluster.average_optimizer);
  w.Int("work_units", job.cluster.work_units);
  w.Double("backup_after", job.cluster.backup_after);
  w.String("lr_scaling", LrScalingName(job.cluster.lr_scaling));
  w.Double("timeout_seconds", job.cluster.timeout_seconds);
  w.Double("heartbeat_timeout", job.cluster.heartbeat_timeout);
  w.String("placement", PlacementPolicyName(job.cluster.placement));
  if (!job.cluster.hosts.empty()) w.StringArray("hosts", job.cluster.hosts);
  w.Int("model_parallel", job.cluster.model_parallel);
  w.String("partition", model::PartitionKindName(job.cluster.partition));
  w.Int("micro_batches", job.cluster.micro_batches);
  w.Section("checkpoint");
  w.Int("every_steps", job.checkpoint.every_steps);
  w.Double("every_seconds", job.checkpoint.every_seconds);
  w.Int("keep", job.checkpoint.keep);
  w.Section("restart");
  if (job.max_restarts < 0) {
    w.Comment("max_restarts: not set, so the daemon's default applies");
  } else {
    w.Int("max_restarts", job.max_restarts);
  }
  return std::move(w).Take();
}

}  // namespace dtrain::config
