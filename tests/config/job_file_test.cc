#include "config/job_file.h"

#include <sys/stat.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/temp_dir.h"
#include "config/diagnostic_checks.h"
#include "config/job_layout.h"
#include "config/thread_layout.h"

namespace dtrain::config {
namespace job_file_test {

namespace fs = std::filesystem;
using testing::CheckDiagnostics;
using testing::Single;
using testing::TestData;

std::string JobPath(std::string_view name) { return (TestData() / "jobs" / name).string(); }
std::string DataFile(std::string_view name) {
  return (TestData() / "jobs" / "files" / name).lexically_normal().string();
}

// A job that must load; fails the test with the diagnostics otherwise.
JobConfig MustLoad(const std::string& path, const std::vector<std::string>& overrides = {}) {
  LoadResult r = LoadJobFile(path, overrides);
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  BOOST_REQUIRE(r.diagnostics.empty());
  return *r.job;
}

LoadResult Parse(std::string_view text, const std::vector<std::string>& overrides = {}) {
  return ParseJobText(text, "inline.toml", overrides, (TestData() / "jobs").string());
}

BOOST_AUTO_TEST_SUITE(job_file)

BOOST_AUTO_TEST_CASE(minimal_file_resolves_every_default) {
  const JobConfig job = MustLoad(JobPath("blobs-minimal.toml"));
  BOOST_TEST(job.name == "blobs-minimal");  // the file's stem
  BOOST_TEST(job.source_path == JobPath("blobs-minimal.toml"));
  const DataConfig& d = job.data;
  BOOST_TEST((d.format == DataFormat::kSynthetic));
  BOOST_TEST(d.train.empty());
  BOOST_TEST(d.header);
  BOOST_TEST(d.label_column.empty());
  BOOST_TEST(d.label_index == -1);
  BOOST_TEST(d.delimiter == ',');
  BOOST_TEST(d.features == 2);  // the blobs generator's default
  BOOST_TEST(!d.standardize);
  BOOST_TEST(d.scale == 1.0f);
  BOOST_TEST(d.validation_fraction == 0.0);
  BOOST_TEST((d.synthetic == SyntheticKind::kBlobs));
  BOOST_TEST(d.rows == 10000);
  BOOST_TEST(d.test_rows == 2000);
  BOOST_TEST(d.classes == 3);
  BOOST_TEST(d.noise == 1.0f);
  BOOST_TEST(d.data_seed == 1u);

  BOOST_TEST((job.model.type == model::ModelType::kSoftmax));
  BOOST_TEST(job.model.hidden.empty());
  BOOST_TEST((job.model.activation == math::Activation::kRelu));
  BOOST_TEST((job.model.loss == model::LossType::kSoftmaxCrossEntropy));
  BOOST_TEST((job.model.init == model::InitScheme::kAuto));
  BOOST_TEST(job.model.inputs == 0);  // from the data
  BOOST_TEST(job.model.outputs == 0);

  const train::TrainOptions& t = job.train;
  BOOST_TEST(t.epochs == 10);
  BOOST_TEST(t.steps == 0);
  BOOST_TEST(t.batch_size == 64);
  BOOST_TEST(t.seed == 1u);
  BOOST_TEST(job.threads == 0);  // auto
  BOOST_TEST(t.eval_every == 0);
  BOOST_TEST(t.log_every == 100);
  BOOST_TEST(t.target_accuracy == 0.0);
  BOOST_TEST(t.weight_decay == 0.0f);
  BOOST_TEST(job.clip_norm == 0.0f);

  BOOST_TEST((job.optimizer.type == optim::OptimizerType::kSgd));
  BOOST_TEST(job.optimizer.momentum == 0.9f);
  BOOST_TEST(!job.optimizer.nesterov);
  BOOST_TEST(job.optimizer.beta1 == 0.9f);
  BOOST_TEST(job.optimizer.beta2 == 0.999f);
  BOOST_TEST(job.optimizer.eps == 1e-8f);
  BOOST_TEST(job.optimizer.initial_accumulator == 0.1f);
  const optim::ScheduleOptions& s = t.schedule;
  BOOST_TEST((s.type == optim::ScheduleType::kConstant));
  BOOST_TEST(s.lr == 0.01f);
  BOOST_TEST(s.warmup_steps == 0);
  BOOST_TEST(s.step_size == 1000);
  BOOST_TEST(s.gamma == 0.1f);
  BOOST_TEST(s.min_lr == 0.0f);

  BOOST_TEST(job.cluster.workers == 1);
  BOOST_TEST((job.cluster.mode == ClusterMode::kSingle));
  BOOST_TEST(job.checkpoint.every_steps == 0);
  BOOST_TEST(job.checkpoint.every_seconds == 0.0);
  BOOST_TEST(job.checkpoint.keep == 3);
  BOOST_TEST(job.priority == 0);
  BOOST_TEST(job.max_restarts == -1);  // the daemon's default
}

BOOST_AUTO_TEST_CASE(idx_job_maps_every_key_and_resolves_paths_against_the_file) {
  const JobConfig job = MustLoad(JobPath("fashion-mlp.toml"));
  BOOST_TEST(job.name == "fashion-mlp");
  BOOST_TEST(job.data.train == DataFile("train-images-idx3-ubyte"));
  BOOST_TEST(job.data.train_labels == DataFile("train-labels-idx1-ubyte"));
  BOOST_TEST(job.data.test == DataFile("t10k-images-idx3-ubyte"));
  BOOST_TEST(job.data.test_labels == DataFile("t10k-labels-idx1-ubyte"));
  BOOST_TEST(fs::path(job.data.train).is_absolute());
  BOOST_TEST(job.data.scale == 255.0f);  // the idx default
  BOOST_TEST(job.data.validation_fraction == 0.1);
  BOOST_TEST((job.model.type == model::ModelType::kMlp));
  BOOST_TEST((job.model.hidden == std::vector<int>{256, 128}));
  BOOST_TEST((job.model.init == model::InitScheme::kHe));
  // No loss given: model::DefaultLoss(mlp, outputs unknown).
  BOOST_TEST((job.model.loss == model::DefaultLoss(model::ModelType::kMlp, 0)));
  BOOST_TEST(job.train.epochs == 5);
  BOOST_TEST(job.train.batch_size == 128);
  BOOST_TEST(job.train.seed == 42u);
  BOOST_TEST(job.train.eval_every == 500);
  BOOST_TEST(job.clip_norm == 5.0f);  // train.clip_norm lives on JobConfig
  BOOST_TEST((job.optimizer.type == optim::OptimizerType::kAdam));
  BOOST_TEST(job.train.schedule.lr == 0.001f);  // optimizer.lr lives in the schedule
  BOOST_TEST((job.train.schedule.type == optim::ScheduleType::kCosine));
  BOOST_TEST(job.train.schedule.warmup_steps == 200);
  BOOST_TEST(job.train.schedule.min_lr == 0.00001f);
  BOOST_TEST(job.checkpoint.every_steps == 1000);
  BOOST_TEST(job.checkpoint.keep == 5);
}

BOOST_AUTO_TEST_CASE(csv_job_with_standardize_momentum_and_workers) {
  const JobConfig job = MustLoad(JobPath("iris-sync.toml"));
  BOOST_TEST((job.data.format == DataFormat::kCsv));
  BOOST_TEST(job.data.train == DataFile("iris.csv"));
  BOOST_TEST(job.data.label_column == "species");
  BOOST_TEST(job.data.standardize);
  BOOST_TEST(job.data.scale == 1.0f);
  BOOST_TEST(job.model.outputs == 3);
  BOOST_TEST(job.train.epochs == 0);
  BOOST_TEST(job.train.steps == 2000);
  BOOST_TEST(job.threads == 2);  // train.threads lives on JobConfig
  BOOST_TEST(job.train.weight_decay == 0.0001f);
  BOOST_TEST(job.train.target_accuracy == 0.95);
  BOOST_TEST((job.optimizer.type == optim::OptimizerType::kMomentum));
  BOOST_TEST(job.optimizer.nesterov);
  BOOST_TEST((job.train.schedule.type == optim::ScheduleType::kStep));
  BOOST_TEST(job.train.schedule.step_size == 500);
  BOOST_TEST(job.train.schedule.gamma == 0.5f);
  BOOST_TEST(job.cluster.workers == 4);
  BOOST_TEST((job.cluster.mode == ClusterMode::kSync));
  BOOST_TEST(job.checkpoint.every_seconds == 30.0);
}

BOOST_AUTO_TEST_CASE(syntax_error_is_one_diagnostic_where_toml_stopped) {
  const std::string path = JobPath("invalid/syntax-error.toml");
  CheckDiagnostics(LoadJobFile(path, {}), {{path, 5, 14, "", "TOML syntax error"}});
}

BOOST_AUTO_TEST_CASE(every_error_of_a_file_is_reported_in_file_order) {
  const std::string f = JobPath("invalid/many-errors.toml");
  CheckDiagnostics(
      LoadJobFile(f, {}),
      {{f, 5, 8, "data.rows", "must be an integer in [1, 100000000], got -5"},
       {f, 6, 9, "data.noise", "must be a finite number in [0, 1000000], got nan"},
       {f, 10, 15, "model.hidden",
        "layer 2 must be an integer in [1, 16777216], got 1000000000000"},
       {f, 13, 10, "train.epochs", "must be an integer in [0, 1000000], got the float 2.5"},
       {f, 14, 1, "train.batchsize", "unknown key; did you mean 'batch_size'?"},
       {f, 15, 11, "train.threads", "must be an integer in [0, 1024], got the string \"4\""},
       {f, 18, 8, "optimizer.type",
        "must be one of: sgd, momentum, adagrad, adam, lbfgs, ftrl; got \"rmsprop\""},
       {f, 19, 6, "optimizer.lr", "must be a number in (0, 1000], got 0"},
       {f, 20, 9, "optimizer.beta2", "must be a finite number in [0, 1), got inf"},
       {f, 23, 11, "cluster.workers", "mode \"single\" trains one worker"},
       {f, 25, 2, "chekpoint", "unknown section; did you mean 'checkpoint'?"}});
}

BOOST_AUTO_TEST_CASE(missing_keys_are_placed_at_their_section_and_missing_files_named) {
  const std::string f = JobPath("invalid/missing-files.toml");
  const std::string absent = DataFile("no-such-images-idx3-ubyte");
  CheckDiagnostics(LoadJobFile(f, {}),
                   {{f, 1, 1, "data.train_labels", "is required for format \"idx\""},
                    {f, 1, 1, "data.test_labels", "is required with data.test"},
                    {f, 3, 9, "data.train", "no such file: " + absent}});
}

BOOST_AUTO_TEST_CASE(contradicting_keys_are_reported_at_the_later_key) {
  const std::string f = JobPath("invalid/inconsistent.toml");
  CheckDiagnostics(
      LoadJobFile(f, {}),
      {{f, 5, 16, "data.label_column", "needs data.header = true"},
       {f, 6, 15, "data.label_index", "conflicts with data.label_column"},
       {f, 10, 8, "model.loss", "needs at least 2 outputs, but type \"logistic\" has exactly 1"},
       {f, 13, 10, "train.epochs", "train.epochs and train.steps are both 0"},
       {f, 18, 10, "optimizer.min_lr", "must not exceed optimizer.lr (0.1), got 0.5"}});
}

BOOST_AUTO_TEST_CASE(libsvm_needs_features_and_refuses_label_files) {
  const std::string f = JobPath("invalid/libsvm-no-features.toml");
  CheckDiagnostics(LoadJobFile(f, {}),
                   {{f, 2, 1, "data.features", "is required for format \"libsvm\""},
                    {f, 5, 16, "data.train_labels", "is only used with format \"idx\""}});
}

BOOST_AUTO_TEST_CASE(missing_job_file_is_named) {
  const std::string path = JobPath("no-such-job.toml");
  const Diagnostic d = Single(LoadJobFile(path, {}));
  BOOST_TEST(d.file == path);
  BOOST_TEST(d.line == 0);
  BOOST_TEST(d.message.find("No such file or directory") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(absent_data_section_is_reported_at_line_zero) {
  CheckDiagnostics(Parse("name = \"x\"\n"),
                   {{"inline.toml", 0, 0, "data.train", "is required for format \"idx\""},
                    {"inline.toml", 0, 0, "data.train_labels", "is required for format \"idx\""}});
}

BOOST_AUTO_TEST_CASE(wrong_types_and_ranges_name_what_is_allowed) {
  CheckDiagnostics(
      Parse("[data]\n"
            "format = \"synthetic\"\n"
            "delimiter = \"::\"\n"
            "scale = \"std\"\n"
            "validation_fraction = 0.95\n"
            "[train]\n"
            "batch_size = 2000000\n"
            "log_every = 0\n"
            "[optimizer]\n"
            "eps = 1e-50\n"
            "nesterov = \"yes\"\n"
            "[checkpoint]\n"
            "keep = []\n"),
      {{"inline.toml", 3, 13, "data.delimiter", "must be one character"},
       {"inline.toml", 4, 9, "data.scale",
        "(the divisor) or \"standardize\", got the string \"std\""},
       {"inline.toml", 5, 23, "data.validation_fraction", "must be a number in [0, 0.9], got 0.95"},
       {"inline.toml", 7, 14, "train.batch_size",
        "must be an integer in [1, 1048576], got 2000000"},
       {"inline.toml", 8, 13, "train.log_every", "must be an integer in [1, 10000000000], got 0"},
       {"inline.toml", 10, 7, "optimizer.eps", "got 1e-50, which single precision rounds to 0"},
       {"inline.toml", 11, 12, "optimizer.nesterov", "must be true or false, got the string"},
       {"inline.toml", 13, 8, "checkpoint.keep",
        "must be an integer in [1, 10000], got an array"}});
}

BOOST_AUTO_TEST_CASE(integers_are_numbers_but_floats_are_not_integers) {
  const LoadResult ok = Parse("[data]\nformat = \"synthetic\"\n[optimizer]\nlr = 1\n");
  BOOST_REQUIRE(ok.ok());
  BOOST_TEST(ok.job->train.schedule.lr == 1.0f);
  const Diagnostic d =
      Single(Parse("[data]\nformat = \"synthetic\"\n[train]\nbatch_size = 64.0\n"));
  BOOST_TEST(d.key == "train.batch_size");
  BOOST_TEST(d.message == "must be an integer in [1, 1048576], got the float 64");
}

BOOST_AUTO_TEST_CASE(model_shape_contradictions) {
  CheckDiagnostics(Parse("[data]\nformat = \"synthetic\"\n"
                         "[model]\n"
                         "type = \"logistic\"\n"
                         "hidden = [8]\n"
                         "outputs = 3\n"),
                   {{"inline.toml", 5, 10, "model.hidden", "only allowed for type \"mlp\""},
                    {"inline.toml", 6, 11, "model.outputs", "has exactly 1 output, got 3"}});
  const Diagnostic loss =
      Single(Parse("[data]\nformat = \"synthetic\"\n"
                   "[model]\ntype = \"mlp\"\noutputs = 10\nloss = \"mse\"\n"));
  BOOST_TEST(loss.key == "model.loss");
  BOOST_TEST(loss.message == "loss \"mse\" needs exactly 1 output, got outputs = 10");
}

BOOST_AUTO_TEST_CASE(default_loss_follows_type_outputs_and_generated_data) {
  const LoadResult r =
      Parse("[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\noutputs = 1\n");
  BOOST_REQUIRE(r.ok());
  BOOST_TEST((r.job->model.loss == model::LossType::kMeanSquaredError));
  // Outputs left to the data: generated data tells them (linear: 1, so regression).
  const LoadResult linear =
      Parse("[data]\nformat = \"synthetic\"\nsynthetic = \"linear\"\n[model]\ntype = \"mlp\"\n");
  BOOST_REQUIRE(linear.ok());
  BOOST_TEST((linear.job->model.loss == model::LossType::kMeanSquaredError));
  BOOST_TEST(linear.job->model.outputs == 0);
  BOOST_TEST(linear.job->data.noise == 0.1f);  // the linear generator's default
  BOOST_TEST(linear.job->data.features == 8);
  const LoadResult blobs = Parse("[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\n");
  BOOST_REQUIRE(blobs.ok());
  BOOST_TEST((blobs.job->model.loss == model::LossType::kSoftmaxCrossEntropy));
  const LoadResult logistic =
      Parse("[data]\nformat = \"synthetic\"\n[model]\ntype = \"logistic\"\n");
  BOOST_REQUIRE(logistic.ok());
  BOOST_TEST((logistic.job->model.loss == model::LossType::kBinaryCrossEntropy));
}

BOOST_AUTO_TEST_CASE(schedule_and_optimizer_consistency) {
  CheckDiagnostics(
      Parse("[data]\nformat = \"synthetic\"\n"
            "[train]\nsteps = 100\n"
            "[optimizer]\n"
            "type = \"momentum\"\n"
            "momentum = 0.0\n"
            "nesterov = true\n"
            "schedule = \"cosine\"\n"
            "warmup_steps = 100\n"),
      {{"inline.toml", 8, 12, "optimizer.nesterov", "needs optimizer.momentum > 0"},
       {"inline.toml", 10, 16, "optimizer.warmup_steps", "must be less than train.steps (100)"}});
}

BOOST_AUTO_TEST_CASE(lbfgs_keys_are_read_round_trip_and_fit_only_a_whole_model_in_one_process) {
  const LoadResult r = Parse(
      "[data]\nformat = \"synthetic\"\n"
      "[optimizer]\ntype = \"lbfgs\"\nhistory = 7\nmax_iterations = 250\n"
      "gradient_tolerance = 1e-6\nloss_tolerance = 1e-12\nmax_evaluations = 30\n"
      "sample_rows = 5000\n");
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  const JobConfig& job = *r.job;
  BOOST_TEST((job.optimizer.type == optim::OptimizerType::kLbfgs));
  BOOST_TEST(job.lbfgs.history == 7);
  BOOST_TEST(job.lbfgs.max_iterations == 250);
  BOOST_TEST(job.lbfgs.gradient_tolerance == 1e-6);
  BOOST_TEST(job.lbfgs.loss_tolerance == 1e-12);
  BOOST_TEST(job.lbfgs.max_evaluations == 30);
  BOOST_TEST(job.sample_rows == 5000);
  const LoadResult back = ParseJobText(FormatResolvedJob(job), "inline.toml", {}, "/");
  BOOST_REQUIRE(back.ok());
  BOOST_TEST((*back.job == job));

  CheckDiagnostics(
      Parse("[data]\nformat = \"synthetic\"\n[optimizer]\ntype = \"lbfgs\"\nhistory = 0\n"
            "[cluster]\nmode = \"sync\"\n"),
      {{"inline.toml", 4, 8, "optimizer.type",
        "is \"lbfgs\", a batch method, but cluster.mode is \"sync\""},
       {"inline.toml", 5, 11, "optimizer.history", "must be an integer in [1, 1000], got 0"}});
  const Diagnostic d = Single(
      Parse("[data]\nformat = \"synthetic\"\n[model]\ntype = \"mlp\"\nhidden = [8, 8]\n"
            "[optimizer]\ntype = \"lbfgs\"\n[cluster]\nmode = \"single\"\nmodel_parallel = 2\n"));
  BOOST_TEST(d.key == "optimizer.type");
  BOOST_TEST(d.message.find("model_parallel") != std::string::npos, d.message);
}

BOOST_AUTO_TEST_CASE(sandblaster_runs_lbfgs_with_a_coordinator_after_workers_and_shards) {
  const LoadResult r = Parse(
      "[data]\nformat = \"synthetic\"\n[optimizer]\ntype = \"lbfgs\"\n"
      "[cluster]\nmode = \"sandblaster\"\nworkers = 3\nservers = 2\nwork_units = 45\n"
      "backup_after = 0.5\n");
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  const ClusterConfig& c = r.job->cluster;
  BOOST_TEST(c.WorkUnits() == 45);
  BOOST_TEST(c.backup_after == 0.5);
  BOOST_TEST(c.Processes() == 6);
  const LoadResult back = ParseJobText(FormatResolvedJob(*r.job), "inline.toml", {}, "/");
  BOOST_REQUIRE(back.ok());
  BOOST_TEST((*back.job == *r.job));
  // Ranks: workers 0-2, shards 3-4, the coordinator 5, which leads and writes the checkpoints;
  // only the workers are expendable.
  BOOST_TEST((RoleOf(c, 2).kind == ProcessRole::Kind::kReplica));
  BOOST_TEST((RoleOf(c, 4).kind == ProcessRole::Kind::kShard));
  BOOST_TEST(RoleOf(c, 4).shard == 1);
  BOOST_TEST((RoleOf(c, 5).kind == ProcessRole::Kind::kCoordinator));
  BOOST_TEST(DescribeProcess(c, 5) == "coordinator");
  BOOST_TEST(std::string(RoleName(c, 5)) == "coordinator");
  BOOST_TEST(LeadRank(c) == 5);
  BOOST_TEST(WritesCheckpoints(c, 5));
  BOOST_TEST(!WritesCheckpoints(c, 0));
  BOOST_TEST(Expendable(c, 0));
  BOOST_TEST(!Expendable(c, 3));
  BOOST_TEST(!Expendable(c, 5));
  ClusterConfig sync = c;
  sync.mode = ClusterMode::kSync;
  BOOST_TEST(LeadRank(sync) == 0);
  BOOST_TEST(WritesCheckpoints(sync, 0));
  BOOST_TEST(!Expendable(sync, 1));

  BOOST_TEST(Parse("[data]\nformat = \"synthetic\"\n[optimizer]\ntype = \"lbfgs\"\n"
                   "[cluster]\nmode = \"sandblaster\"\nworkers = 2\n")
                 .job->cluster.WorkUnits() == 20);
  CheckDiagnostics(Parse("[data]\nformat = \"synthetic\"\n[cluster]\nmode = \"sandblaster\"\n"
                         "backup_after = 1.5\n"),
                   {{"inline.toml", 4, 8, "cluster.mode", "which runs L-BFGS"},
                    {"inline.toml", 5, 16, "cluster.backup_after", "must be"}});
}

BOOST_AUTO_TEST_CASE(several_workers_need_a_distributed_mode) {
  BOOST_TEST(Parse("[data]\nformat = \"synthetic\"\n[cluster]\nmode = \"sync\"\n").ok());
  BOOST_TEST(
      Parse("[data]\nformat = \"synthetic\"\n[cluster]\nworkers = 3\nmode = \"local\"\n").ok());
  const Diagnostic d =
      Single(Parse("[data]\nformat = \"synthetic\"\n[cluster]\nworkers = 2\nmode = \"single\"\n"));
  BOOST_TEST(d.key == "cluster.workers");
  BOOST_TEST(d.line == 4);
}

BOOST_AUTO_TEST_CASE(cluster_hosts_must_be_node_names) {
  const LoadResult r = Parse(
      "[data]\nformat = \"synthetic\"\n[cluster]\nhosts = [\"a b\", 3]\n"
      "placement = \"everywhere\"\n");
  BOOST_REQUIRE(!r.ok());
  BOOST_REQUIRE(r.diagnostics.size() == 3u);
  BOOST_TEST(r.diagnostics[0].key == "cluster.hosts");
  BOOST_TEST(r.diagnostics[0].message.starts_with("host 1 must be a node name"));
  BOOST_TEST(r.diagnostics[1].message.starts_with("host 2 must be a node name"));
  BOOST_TEST(r.diagnostics[2].key == "cluster.placement");
  BOOST_TEST(r.diagnostics[2].message.find("pack, spread") != std::string::npos,
             r.diagnostics[2].message);
  BOOST_TEST(!Parse("[data]\nformat = \"synthetic\"\n[cluster]\nhosts = []\n").ok());
}

BOOST_AUTO_TEST_CASE(automatic_threads_share_the_host_cores_among_its_replicas) {
  JobConfig job;  // threads = 0: auto
  BOOST_TEST(ThreadsPerReplica(job, 1, 8) == 8);
  BOOST_TEST(ThreadsPerReplica(job, 3, 8) == 2);
  BOOST_TEST(ThreadsPerReplica(job, 4, 2) == 1);  // never below one
  job.threads = 3;
  BOOST_TEST(ThreadsPerReplica(job, 4, 2) == 3);  // as the file says
}

BOOST_AUTO_TEST_CASE(a_replica_splits_its_batch_over_its_threads_where_that_pays) {
  model::ModelSpec mlp;
  mlp.type = model::ModelType::kMlp;
  mlp.inputs = 784;
  mlp.hidden = {512, 256};
  mlp.outputs = 10;
  model::ModelSpec softmax = mlp;
  softmax.hidden.clear();
  JobConfig job;
  job.train.batch_size = 128;
  const model::Model big(mlp), small(softmax);
  BOOST_TEST(MultiplyAddsPerRow(big) == 784.0 * 512 + 512 * 256 + 256 * 10);

  ThreadLayout t = ChooseThreadLayout(job, big, 1, 2);
  BOOST_TEST(t.threads == 2);
  BOOST_TEST(t.split);
  BOOST_TEST(t.BlasThreads() == 1);
  BOOST_TEST(t.Describe() == "2 threads, each a slice of the batch");
  BOOST_TEST(ChooseThreadLayout(job, big, 2, 2).threads == 1);  // two replicas: a core each
  // A small model never gets a thread that costs more than it brings: train.threads is the most
  // a replica uses.
  t = ChooseThreadLayout(job, small, 1, 2);
  BOOST_TEST(t.threads == 1);
  BOOST_TEST(t.reason.find("too small") != std::string::npos, t.reason);
  job.threads = 2;
  BOOST_TEST(ChooseThreadLayout(job, small, 1, 2).threads == 1);
  // Slices keep kMinSliceRows rows.
  job.threads = 8;
  job.train.batch_size = 20;
  BOOST_TEST(ChooseThreadLayout(job, big, 1, 2).threads == 2);
  // L-BFGS runs its passes whole, on BLAS threads.
  job.optimizer.type = optim::OptimizerType::kLbfgs;
  t = ChooseThreadLayout(job, big, 1, 2);
  BOOST_TEST(t.threads == 8);
  BOOST_TEST(!t.split);
  BOOST_TEST(t.Describe() == "8 BLAS threads");
}

BOOST_AUTO_TEST_CASE(cluster_keys_of_every_mode_are_read_and_checked) {
  const LoadResult r = Parse(
      "[data]\nformat = \"synthetic\"\n"
      "[cluster]\nworkers = 4\nmode = \"sync\"\nallreduce = \"ps\"\nservers = 2\n"
      "push_every = 3\nfetch_every = 5\nmax_staleness = 2\naverage_every = 16\n"
      "average_optimizer = true\nlr_scaling = \"sqrt\"\ntimeout_seconds = 7.5\n"
      "placement = \"spread\"\nhosts = [\"node-1\", \"node-2.lab\"]\n");
  BOOST_REQUIRE(r.ok());
  const ClusterConfig& c = r.job->cluster;
  BOOST_TEST((c.allreduce == AllReduce::kPs));
  BOOST_TEST(c.servers == 2);
  BOOST_TEST(c.Servers() == 2);
  BOOST_TEST(c.push_every == 3);
  BOOST_TEST(c.fetch_every == 5);
  BOOST_TEST(c.max_staleness == 2);
  BOOST_TEST(c.average_every == 16);
  BOOST_TEST(c.average_optimizer);
  BOOST_TEST((c.lr_scaling == LrScaling::kSqrt));
  BOOST_TEST(c.timeout_seconds == 7.5);
  BOOST_TEST((c.placement == PlacementPolicy::kSpread));
  BOOST_TEST((c.hosts == std::vector<std::string>{"node-1", "node-2.lab"}));
  BOOST_TEST(ScaledLearningRate(*r.job) == r.job->train.schedule.lr * 2.0f);
  const LoadResult again = ParseJobText(FormatResolvedJob(*r.job), "again", {}, "/");
  BOOST_REQUIRE(again.ok());
  BOOST_TEST((again.job->cluster == c));

  // Ring mode runs no shards; async's shards default to Adagrad unless the file names one.
  const LoadResult ring = Parse("[data]\nformat = \"synthetic\"\n[cluster]\nmode = \"sync\"\n");
  BOOST_REQUIRE(ring.ok());
  BOOST_TEST(ring.job->cluster.Servers() == 0);
  const LoadResult async =
      Parse("[data]\nformat = \"synthetic\"\n[cluster]\nworkers = 2\nmode = \"async\"\n");
  BOOST_REQUIRE(async.ok());
  BOOST_TEST((async.job->optimizer.type == optim::OptimizerType::kAdagrad));
  BOOST_TEST(async.job->cluster.Servers() == 1);
  const LoadResult named = Parse(
      "[data]\nformat = \"synthetic\"\n[optimizer]\ntype = \"adam\"\n"
      "[cluster]\nworkers = 2\nmode = \"async\"\n");
  BOOST_REQUIRE(named.ok());
  BOOST_TEST((named.job->optimizer.type == optim::OptimizerType::kAdam));

  CheckDiagnostics(
      Parse("[data]\nformat = \"synthetic\"\n[cluster]\nallreduce = \"tree\"\nservers = 0\n"
            "max_staleness = -1\nlr_scaling = \"square\"\ntimeout_seconds = 0.0\n"),
      {{"inline.toml", 4, 13, "cluster.allreduce", "got \"tree\""},
       {"inline.toml", 5, 11, "cluster.servers", "must be an integer in [1, 1024]"},
       {"inline.toml", 6, 17, "cluster.max_staleness", "must be an integer in [0, 1000000]"},
       {"inline.toml", 7, 14, "cluster.lr_scaling", "got \"square\""},
       {"inline.toml", 8, 19, "cluster.timeout_seconds", "in [0.1, 86400]"}});
}

BOOST_AUTO_TEST_CASE(the_ring_transport_is_auto_unless_the_file_says_tcp) {
  const LoadResult plain = Parse("[data]\nformat = \"synthetic\"\n");
  BOOST_REQUIRE(plain.ok());
  BOOST_TEST((plain.job->cluster.transport == Transport::kAuto));
  const LoadResult tcp = Parse(
      "[data]\nformat = \"synthetic\"\n[cluster]\nworkers = 2\nmode = \"sync\"\n"
      "transport = \"tcp\"\n");
  BOOST_REQUIRE(tcp.ok());
  BOOST_TEST((tcp.job->cluster.transport == Transport::kTcp));
  const std::string text = FormatResolvedJob(*tcp.job);
  BOOST_TEST(text.find("transport = \"tcp\"") != std::string::npos);
  const LoadResult again = ParseJobText(text, "again", {}, "/");
  BOOST_REQUIRE(again.ok());
  BOOST_TEST((again.job->cluster == tcp.job->cluster));
  CheckDiagnostics(Parse("[data]\nformat = \"synthetic\"\n[cluster]\ntransport = \"shm\"\n"),
                   {{"inline.toml", 4, 13, "cluster.transport", "got \"shm\""}});
}

BOOST_AUTO_TEST_CASE(float_messages_carry_a_checksum_unless_the_file_says_not) {
  const LoadResult plain = Parse("[data]\nformat = \"synthetic\"\n");
  BOOST_REQUIRE(plain.ok());
  BOOST_TEST(plain.job->cluster.checksum);
  const LoadResult off = Parse(
      "[data]\nformat = \"synthetic\"\n[cluster]\nworkers = 2\nmode = \"sync\"\nchecksum = "
      "false\n");
  BOOST_REQUIRE(off.ok());
  BOOST_TEST(!off.job->cluster.checksum);
  const LoadResult again = ParseJobText(FormatResolvedJob(*off.job), "again", {}, "/");
  BOOST_REQUIRE(again.ok());
  BOOST_TEST((again.job->cluster == off.job->cluster));
  CheckDiagnostics(Parse("[data]\nformat = \"synthetic\"\n[cluster]\nchecksum = \"no\"\n"),
                   {{"inline.toml", 4, 12, "cluster.checksum", "must be true or false"}});
}

BOOST_AUTO_TEST_CASE(bucket_bytes_is_a_size_shown_where_the_exchange_overlaps) {
  const std::string sync =
      "[data]\nformat = \"synthetic\"\n[cluster]\nworkers = 2\nmode = \"sync\"\n";
  const LoadResult plain = Parse(sync);
  BOOST_REQUIRE(plain.ok());
  BOOST_TEST(plain.job->cluster.bucket_bytes == ClusterConfig::kDefaultBucketBytes);
  BOOST_TEST(plain.job->cluster.OverlapApplies());
  const LoadResult sized = Parse(sync + "bucket_bytes = \"1 MiB\"\n");
  BOOST_REQUIRE(sized.ok());
  BOOST_TEST(sized.job->cluster.bucket_bytes == 1u << 20);
  const std::string shown = FormatResolvedJob(*sized.job, ResolvedKeys::kApplicable);
  BOOST_TEST(shown.find("bucket_bytes = 1048576") != std::string::npos, shown);
  const LoadResult again = ParseJobText(shown, "again", {}, "/");
  BOOST_REQUIRE(again.ok());
  BOOST_TEST((again.job->cluster == sized.job->cluster));
  const LoadResult off = Parse(sync + "bucket_bytes = 0\n");
  BOOST_REQUIRE(off.ok());
  BOOST_TEST(off.job->cluster.bucket_bytes == 0u);
  // Parameter servers exchange their gradients another way; compressed ring replicas compress
  // each bucket.
  const LoadResult ps = Parse(sync + "allreduce = \"ps\"\n");
  BOOST_REQUIRE(ps.ok());
  BOOST_TEST(!ps.job->cluster.OverlapApplies());
  BOOST_TEST(FormatResolvedJob(*ps.job, ResolvedKeys::kApplicable).find("bucket_bytes") ==
             std::string::npos);
  const LoadResult compressed = Parse(sync + "compression = \"bf16\"\n");
  BOOST_REQUIRE(compressed.ok());
  BOOST_TEST(compressed.job->cluster.OverlapApplies());
  CheckDiagnostics(Parse(sync + "bucket_bytes = \"2 GiB\"\n"),
                   {{"inline.toml", 6, 16, "cluster.bucket_bytes", "must be from 0 B to 1 GiB"}});
}

BOOST_AUTO_TEST_CASE(unknown_keys_get_the_closest_name_or_the_list) {
  CheckDiagnostics(
      Parse("epochs = 3\n"
            "[data]\nformat = \"synthetic\"\n"
            "[model]\nlr = 0.1\n"
            "[cluster]\ncolour = 1\n"
            "[optimizer]\ntype = \"adamw\"\n"),
      {{"inline.toml", 1, 1, "epochs", "unknown key; did you mean 'train.epochs'?"},
       {"inline.toml", 5, 1, "model.lr", "unknown key; did you mean 'optimizer.lr'?"},
       {"inline.toml", 7, 1, "cluster.colour",
        "unknown key; allowed: workers, mode, allreduce, servers, push_every, fetch_every, "
        "max_staleness, average_every, average_optimizer, lr_scaling, timeout_seconds"},
       {"inline.toml", 9, 8, "optimizer.type", "got \"adamw\" (did you mean \"adam\"?)"}});
}

BOOST_AUTO_TEST_CASE(sections_must_be_tables_and_names_must_be_simple) {
  CheckDiagnostics(
      Parse("name = \"my job\"\ntrain = 5\n[data]\nformat = \"synthetic\"\n"),
      {{"inline.toml", 1, 8, "name", "letters, digits, '.', '_' or '-'"},
       {"inline.toml", 2, 9, "train", "must be a table ([train]), got the integer 5"}});
}

BOOST_AUTO_TEST_CASE(data_paths_must_fit_the_format) {
  CheckDiagnostics(
      Parse("[data]\nformat = \"synthetic\"\ntrain = \"files/iris.csv\"\n"
            "test_labels = \"files/t10k-labels-idx1-ubyte\"\n"),
      {{"inline.toml", 3, 9, "data.train", "is not used with format \"synthetic\""},
       {"inline.toml", 4, 15, "data.test_labels", "is only used with format \"idx\""}});
  const Diagnostic d =
      Single(Parse("[data]\ntrain = \"files/train-images-idx3-ubyte\"\n"
                   "train_labels = \"files/train-labels-idx1-ubyte\"\n"
                   "test_labels = \"files/t10k-labels-idx1-ubyte\"\n"));
  BOOST_TEST(d.key == "data.test_labels");
  BOOST_TEST(d.message == "is given without data.test");
  const Diagnostic dir = Single(Parse("[data]\nformat = \"csv\"\ntrain = \"files\"\n"));
  BOOST_TEST(dir.message == "is a directory, not a file: " +
                                (TestData() / "jobs" / "files").lexically_normal().string());
}

// format "npy": a .npy needs its labels file, a .npz may hold them (its labels_array); the array
// keys belong to this format only and name a member; the job round-trips through its TOML.
BOOST_AUTO_TEST_CASE(npy_jobs_name_label_files_or_npz_arrays) {
  testing::TempDir dir;
  dir.Write("x.npy", "");
  dir.Write("y.npy", "");
  dir.Write("t.npz", "");
  const auto parse = [&](const std::string& data) {
    return ParseJobText("[data]\nformat = \"npy\"\n" + data, "inline.toml", {}, dir.Path(""));
  };
  CheckDiagnostics(
      parse("train = \"x.npy\"\ntest = \"x.npy\"\n"),
      {{"inline.toml", 1, 1, "data.train_labels",
        "is required for format \"npy\" (the training labels file, unless "
        "data.train is a .npz that holds them)"},
       {"inline.toml", 1, 1, "data.test_labels", "is required with data.test for format \"npy\""}});
  const LoadResult npz = parse(
      "train = \"t.npz\"\ntest = \"t.npz\"\nfeatures_array = \"arr_0\"\n"
      "labels_array = \"arr_1\"\n");
  for (const Diagnostic& d : npz.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(npz.ok());
  BOOST_TEST(npz.job->data.features_array == "arr_0");
  BOOST_TEST(npz.job->data.labels_array == "arr_1");
  BOOST_TEST(npz.job->data.scale == 1.0f);
  const std::string text = FormatResolvedJob(*npz.job);
  const LoadResult again = ParseJobText(text, "inline.toml", {}, dir.Path(""));
  BOOST_REQUIRE(again.ok());
  BOOST_TEST((*again.job == *npz.job));
  const LoadResult npy = parse("train = \"x.npy\"\ntrain_labels = \"y.npy\"\n");
  BOOST_REQUIRE(npy.ok());
  BOOST_TEST(npy.job->data.train_labels == dir.Path("y.npy"));
  CheckDiagnostics(parse("train = \"t.npz\"\nfeatures_array = \"\"\nlabels_array = \"a/b\"\n"),
                   {{"inline.toml", 4, 18, "data.features_array",
                     "must name an array of the .npz (as given to numpy.savez, e.g. \"x\" or "
                     "\"arr_0\"), got \"\""},
                    {"inline.toml", 5, 16, "data.labels_array", "must name an array of the .npz"}});
  CheckDiagnostics(
      Parse("[data]\nformat = \"csv\"\ntrain = \"files/iris.csv\"\nfeatures_array = \"x\"\n"),
      {{"inline.toml", 4, 18, "data.features_array", "is only used with format \"npy\""}});
  CheckDiagnostics(Parse("[data]\nformat = \"numpy\"\n"),
                   {{"inline.toml", 2, 10, "data.format", "(did you mean \"npy\"?)"}});
}

BOOST_AUTO_TEST_CASE(a_data_path_to_a_fifo_or_a_device_is_refused_not_read) {
  // validate and submit check the files as the submitter: a FIFO or /dev/zero would hang them.
  const Diagnostic zero = Single(Parse("[data]\nformat = \"csv\"\ntrain = \"/dev/zero\"\n"));
  BOOST_TEST(zero.key == "data.train");
  BOOST_TEST(zero.message == "is a character device, not a regular file: /dev/zero");
  testing::TempDir dir;
  const std::string fifo = dir.Path("train.csv");
  BOOST_REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const Diagnostic named =
      Single(Parse("[data]\nformat = \"csv\"\ntrain = \"" + fifo + "\"\n"));
  BOOST_TEST(named.message == "is a FIFO, not a regular file: " + fifo);
}

BOOST_AUTO_TEST_CASE(overrides_are_applied_before_validation) {
  const JobConfig job =
      MustLoad(JobPath("fashion-mlp.toml"),
               {"train.epochs=1", "model.hidden=[64]", "optimizer.type=sgd", "optimizer.lr = 0.5",
                "cluster.mode=\"sync\"", "cluster.workers=2"});
  BOOST_TEST(job.train.epochs == 1);
  BOOST_TEST((job.model.hidden == std::vector<int>{64}));
  BOOST_TEST((job.optimizer.type == optim::OptimizerType::kSgd));  // a bare word is a string
  BOOST_TEST(job.train.schedule.lr == 0.5f);
  BOOST_TEST((job.cluster.mode == ClusterMode::kSync));  // [cluster] is absent from the file
  BOOST_TEST(job.cluster.workers == 2);
  BOOST_TEST(job.train.batch_size == 128);  // the rest of the file stays
}

BOOST_AUTO_TEST_CASE(override_paths_are_relative_to_the_current_directory) {
  const std::string csv = DataFile("iris.csv");
  const std::string relative = fs::relative(csv, fs::current_path()).string();
  const JobConfig job = MustLoad(JobPath("iris-sync.toml"), {"data.train=" + relative});
  BOOST_TEST(job.data.train == csv);
}

BOOST_AUTO_TEST_CASE(overrides_are_validated_and_reported_as_set) {
  const std::string f = JobPath("fashion-mlp.toml");
  CheckDiagnostics(LoadJobFile(f, {"train.epochs=-1", "train.batchsize=3", "model.hidden=[64",
                                   "optimizer.lr", "optimizer.type=adamw"}),
                   {{"--set", 0, 0, "model.hidden", "cannot parse \"model.hidden=[64\""},
                    {"--set", 0, 0, "optimizer.lr", "expected key=value, got \"optimizer.lr\""},
                    {"--set", 0, 0, "train.epochs", "must be an integer in [0, 1000000], got -1"},
                    {"--set", 0, 0, "optimizer.type", "(did you mean \"adam\"?)"},
                    {"--set", 0, 0, "train.batchsize", "unknown key; did you mean 'batch_size'?"}});
}

BOOST_AUTO_TEST_CASE(file_diagnostics_come_before_override_diagnostics) {
  const std::string f = JobPath("invalid/inconsistent.toml");
  const LoadResult r = LoadJobFile(f, {"train.seed=-3"});
  BOOST_REQUIRE_EQUAL(r.diagnostics.size(), 6u);
  BOOST_TEST(r.diagnostics[4].file == f);
  BOOST_TEST(r.diagnostics[5].file == "--set");
  BOOST_TEST(r.diagnostics[5].key == "train.seed");
}

BOOST_AUTO_TEST_CASE(resolved_toml_parses_back_to_an_equal_job) {
  for (const char* name : {"blobs-minimal.toml", "fashion-mlp.toml", "iris-sync.toml"}) {
    BOOST_TEST_CONTEXT(name) {
      const JobConfig job = MustLoad(JobPath(name));
      const std::string text = FormatResolvedJob(job);
      const LoadResult again = ParseJobText(text, job.source_path, {}, "/nonexistent");
      for (const Diagnostic& d : again.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
      BOOST_REQUIRE(again.ok());
      BOOST_TEST((*again.job == job));
      BOOST_TEST(FormatResolvedJob(*again.job) == text);
    }
  }
}

// What dtrain validate prints: only the keys that apply, which parse back to the same job
// wherever they matter (the keys left out keep values nothing reads).
BOOST_AUTO_TEST_CASE(the_applicable_keys_leave_out_what_the_job_does_not_read) {
  const auto has = [](const std::string& text, const std::string& key) {
    return text.find("\n" + key + " = ") != std::string::npos;
  };
  const JobConfig fashion = MustLoad(JobPath("fashion-mlp.toml"));
  const std::string shown = FormatResolvedJob(fashion, ResolvedKeys::kApplicable);
  const std::string all = FormatResolvedJob(fashion);
  for (const char* key : {"header", "delimiter", "features", "synthetic", "rows", "history",
                          "alpha", "allreduce", "servers", "push_every", "average_every",
                          "work_units", "partition"}) {
    BOOST_TEST(!has(shown, key), key);
    BOOST_TEST(has(all, key), key);
  }
  for (const char* key : {"format", "train_labels", "test_labels", "scale", "lr", "schedule",
                          "workers", "mode", "every_steps"}) {
    BOOST_TEST(has(shown, key), key);
  }
  const LoadResult again = ParseJobText(shown, fashion.source_path, {}, "/nonexistent");
  BOOST_REQUIRE(again.ok());
  BOOST_TEST((again.job->data.train == fashion.data.train));
  BOOST_TEST((again.job->model == fashion.model));
  BOOST_TEST((again.job->optimizer.type == fashion.optimizer.type));
  BOOST_TEST(again.job->train.schedule.lr == fashion.train.schedule.lr);

  // Sync on parameter servers: the mode's own keys appear, an async one's do not.
  const JobConfig sync = MustLoad(JobPath("iris-sync.toml"));
  const std::string sync_shown = FormatResolvedJob(sync, ResolvedKeys::kApplicable);
  BOOST_TEST(has(sync_shown, "allreduce"));
  BOOST_TEST(has(sync_shown, "timeout_seconds"));
  BOOST_TEST(!has(sync_shown, "push_every"));
  BOOST_TEST(!has(sync_shown, "synthetic"));
  BOOST_TEST(has(sync_shown, "header"));  // a CSV file's keys
}

BOOST_AUTO_TEST_CASE(resolved_toml_round_trips_awkward_values) {
  const LoadResult r = Parse(
      "name = \"odd.values_1\"\n"
      "[data]\nformat = \"csv\"\ntrain = \"files/iris.csv\"\n"
      "label_column = \"tab\\there \\\"quoted\\\" back\\\\slash\"\n"
      "delimiter = \"\\t\"\nscale = 3.3\n"
      "[optimizer]\nlr = 0.003\nmin_lr = 1e-7\neps = 1e-9\ngamma = 0.3\n"
      "[train]\ntarget_accuracy = 0.123456789\nseed = 9223372036854775807\n"
      "[checkpoint]\nevery_seconds = 0.1\n");
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  const LoadResult back = ParseJobText(FormatResolvedJob(*r.job), "inline.toml", {}, "/");
  BOOST_REQUIRE(back.ok());
  const JobConfig& again = *back.job;
  BOOST_TEST((again == *r.job));
  BOOST_TEST(again.data.label_column == "tab\there \"quoted\" back\\slash");
  BOOST_TEST(again.data.delimiter == '\t');
  BOOST_TEST(again.train.seed == 9223372036854775807u);
}

BOOST_AUTO_TEST_CASE(priority_and_restart_limit_are_read) {
  const LoadResult r =
      Parse("priority = -7\n[data]\nformat = \"synthetic\"\n[restart]\nmax_restarts = 5\n");
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  BOOST_TEST(r.job->priority == -7);
  BOOST_TEST(r.job->max_restarts == 5);
  const LoadResult limits =
      Parse("priority = 100\n[data]\nformat = \"synthetic\"\n[restart]\nmax_restarts = 0\n");
  BOOST_REQUIRE(limits.ok());
  BOOST_TEST(limits.job->priority == 100);
  BOOST_TEST(limits.job->max_restarts == 0);
  const LoadResult empty_section = Parse("[data]\nformat = \"synthetic\"\n[restart]\n");
  BOOST_REQUIRE(empty_section.ok());
  BOOST_TEST(empty_section.job->max_restarts == -1);
  const JobConfig overridden =
      MustLoad(JobPath("blobs-minimal.toml"), {"priority=-100", "restart.max_restarts=100"});
  BOOST_TEST(overridden.priority == -100);
  BOOST_TEST(overridden.max_restarts == 100);
}

BOOST_AUTO_TEST_CASE(priority_and_restart_limit_ranges) {
  CheckDiagnostics(
      Parse("priority = 101\n"
            "max_restarts = 2\n"
            "[data]\nformat = \"synthetic\"\n"
            "[restart]\n"
            "max_restarts = -1\n"
            "max_restart = 2\n"),
      {{"inline.toml", 1, 12, "priority", "must be an integer in [-100, 100], got 101"},
       {"inline.toml", 2, 1, "max_restarts", "unknown key; did you mean 'restart.max_restarts'?"},
       {"inline.toml", 6, 16, "restart.max_restarts", "must be an integer in [0, 100], got -1"},
       {"inline.toml", 7, 1, "restart.max_restart", "unknown key; did you mean 'max_restarts'?"}});
  CheckDiagnostics(Parse("priority = 1.5\nrestart = 3\n[data]\nformat = \"synthetic\"\n"),
                   {{"inline.toml", 1, 12, "priority", "got the float 1.5"},
                    {"inline.toml", 2, 11, "restart", "must be a table ([restart])"}});
  CheckDiagnostics(
      Parse("priority = -101\n[data]\nformat = \"synthetic\"\n[restart]\nmax_restarts = "
            "\"3\"\n"),
      {{"inline.toml", 1, 12, "priority", "got -101"},
       {"inline.toml", 5, 16, "restart.max_restarts", "got the string \"3\""}});
}

BOOST_AUTO_TEST_CASE(resolved_toml_round_trips_priority_and_restart_limit) {
  for (const char* extra : {"", "priority = 42\n[restart]\nmax_restarts = 7\n",
                            "priority = -3\n[restart]\nmax_restarts = 0\n"}) {
    BOOST_TEST_CONTEXT(extra) {
      const LoadResult r = Parse(std::string(extra) + "[data]\nformat = \"synthetic\"\n");
      BOOST_REQUIRE(r.ok());
      const std::string text = FormatResolvedJob(*r.job);
      BOOST_TEST(text.find("priority = " + std::to_string(r.job->priority) + "\n") !=
                 std::string::npos);
      BOOST_TEST(text.find("\n[restart]\n") != std::string::npos);
      const LoadResult back = ParseJobText(text, "inline.toml", {}, "/");
      for (const Diagnostic& d : back.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
      BOOST_REQUIRE(back.ok());
      BOOST_TEST((*back.job == *r.job));
      BOOST_TEST(back.job->max_restarts == r.job->max_restarts);
      BOOST_TEST(FormatResolvedJob(*back.job) == text);
    }
  }
}

BOOST_AUTO_TEST_CASE(job_equality_sees_nested_engine_options) {
  const JobConfig job = MustLoad(JobPath("blobs-minimal.toml"));
  JobConfig other = job;
  BOOST_TEST((other == job));
  other.train.schedule.min_lr = 0.001f;
  BOOST_TEST(!(other == job));
  other = job;
  other.optimizer.beta2 = 0.99f;
  BOOST_TEST(!(other == job));
  other = job;
  other.priority = 1;
  BOOST_TEST(!(other == job));
  other = job;
  other.max_restarts = 0;
  BOOST_TEST(!(other == job));
}

BOOST_AUTO_TEST_CASE(diagnostics_format_with_and_without_a_place) {
  BOOST_TEST(FormatDiagnostic({"job.toml", 12, 3, "train.batch_size", "must be ..."}) ==
             "job.toml:12:3: train.batch_size: must be ...");
  BOOST_TEST(FormatDiagnostic({"--set", 0, 0, "train.epochs", "must be ..."}) ==
             "--set: train.epochs: must be ...");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace job_file_test
}  // namespace dtrain::config
