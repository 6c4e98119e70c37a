#include "daemon/worker/worker_main.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "config/job_file.h"
#include "config/job_layout.h"
#include "config/mode_traits.h"
#include "core/dist/peer_links.h"
#include "core/math/compute_signals.h"
#include "core/net/frame_stream.h"
#include "core/net/host_info.h"
#include "daemon/runner/elastic_replica.h"
#include "daemon/runner/final_class_report.h"
#include "daemon/runner/job_precision.h"
#include "daemon/runner/lbfgs_run.h"
#include "daemon/runner/memory_limit.h"
#include "daemon/runner/progress_lines.h"
#include "daemon/runner/recorded_training.h"
#include "daemon/runner/sandblaster_run.h"
#include "daemon/runner/shard_service.h"
#include "daemon/runner/sparse_cluster.h"
#include "daemon/runner/sparse_run.h"
#include "daemon/runner/trainer_checkpoint.h"
#include "daemon/runner/training_session.h"
#include "daemon/server/launch.h"
#include "daemon/server/worker_channel_request.h"
#include "daemon/worker/control_reply.h"
#include "daemon/worker/exit_status.h"
#include "daemon/worker/launch_secret.h"
#include "daemon/worker/regroup_exchange.h"
#include "daemon/worker/upstream.h"
#include "daemon/worker/upstream_recorder.h"
#include "daemon/worker/worker_stop.h"

namespace dtrain::worker {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

std::atomic<bool> g_stop{false};
extern "C" void OnWorkerStopSignal(int) { g_stop.store(true); }

int Fail(const std::string& message) { return ExitFailed("worker: " + message); }

// Prints the run's plain progress lines on stdout, flushed line by line (it is a pipe); the
// evaluation lines only when `evaluations` (see PrintsEvaluations).
class LinePrinter final : public runner::RunObserver {
 public:
  explicit LinePrinter(bool evaluations) : evaluations_(evaluations) {}
  void OnStart(const runner::RunProgress& progress, const runner::RunSubject& subject,
               bool resumed) override {
    eval_name_ = subject.eval_name;
    Print(runner::StartLine(progress, subject, resumed));
  }
  void OnMetrics(const runner::RunProgress& progress,
                 std::span<const train::MetricPoint> points) override {
    if (!evaluations_) return;
    if (auto line = runner::EvalLine(progress, points, eval_name_)) Print(*line);
  }
  void OnEvent(const std::string& line) override { Print(line); }
  void OnCheckpoint(const runner::RunProgress& progress) override {
    Print(std::string("checkpoint at ") + (progress.iterations ? "iteration " : "step ") +
          std::to_string(progress.step));
  }

 private:
  static void Print(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  bool evaluations_;
  std::string eval_name_;
};

// In a sync job every replica holds the same parameters, so their evaluations agree: replica 0
// alone prints them. The replicas of other modes differ, and each prints its own.
bool PrintsEvaluations(const config::JobConfig& job, int rank) {
  return config::TraitsOf(job.cluster.mode).exchange != config::Exchange::kSynchronous ||
         config::RoleOf(job.cluster, rank).replica == 0;
}

// What the daemon answered to worker_hello once every process of the job had said hello.
struct Admitted {
  config::JobConfig job;
  std::optional<store::CheckpointData> resume;
  std::vector<dist::Endpoint> peers;            // by rank; empty for a one-process job
  std::vector<dist::Endpoint> partition_peers;  // by rank: their partition rings' listeners
  std::string data_token;                       // opens every data-plane connection of this attempt
  bool joining = false;  // an elastic job's replacement: it takes its state from a survivor
  std::vector<int> members;  // an elastic job started with fewer replicas: its first membership
};

// Tells the coordinator this process cannot succeed here however often it is restarted (`stop`
// is one of IsHopeless's), and why. Best effort: the process fails either way.
void SayHopeless(Upstream& upstream, WorkerStop stop, const std::string& why) {
  const json done = {
      {"v", 1}, {"type", "worker_done"}, {"stop", WireName(stop)}, {"steps", 0}, {"error", why}};
  if (upstream.Send(net::MessageType::kControl, done.dump(), 10s).ok()) {
    // Its acknowledgement (or the checkpoint that was on its way); best effort, as above.
    (void)upstream.Read(10s);
  }
}

int FailHopeless(Upstream& upstream, WorkerStop stop, const std::string& why) {
  SayHopeless(upstream, stop, why);
  return Fail(why);
}

// A training run's failure: a divergence is hopeless (a restart would diverge again), anything
// else may be mended by a restart.
int FailTraining(Upstream& upstream, const Status& why) {
  if (train::IsDivergence(why)) return FailHopeless(upstream, WorkerStop::kDiverged, why.message());
  return Fail(why.message());
}

Result<Admitted> ReadAdmission(Upstream& upstream, std::chrono::milliseconds timeout) {
  const std::int64_t job_id = upstream.job();
  Result<json> admitted = ReadReply(upstream, timeout);
  if (!admitted.ok()) return Status::Error("not admitted: " + admitted.status().message());
  const json& reply = admitted.value();
  if (!reply.contains("spec_toml") || !reply["spec_toml"].is_string()) {
    return Status::Error("the daemon sent no job file");
  }
  config::LoadResult loaded = config::ParseJobText(reply["spec_toml"].get<std::string>(),
                                                   "job " + std::to_string(job_id), {}, "/");
  if (!loaded.ok()) {  // it was valid at submission: its files are missing here
    const std::string why = config::FormatDiagnostic(loaded.diagnostics.front());
    SayHopeless(upstream, WorkerStop::kNoData, why);
    return Status::Error(why);
  }
  Admitted out{*loaded.job, std::nullopt, {}, {}, {}, false, {}};
  if (reply.contains("data_token") && reply["data_token"].is_string()) {
    out.data_token = reply["data_token"].get<std::string>();
  }
  Result<PeerTable> table = ParsePeerTable(reply);
  if (!table.ok()) return table.status();
  out.peers = std::move(table.value().peers);
  out.partition_peers = std::move(table.value().partition_peers);
  const auto joining = reply.find("joining");
  out.joining = joining != reply.end() && *joining == true;
  if (const auto members = reply.find("members"); members != reply.end()) {
    const bool ranks = members->is_array() &&
                       std::all_of(members->begin(), members->end(),
                                   [](const json& r) { return r.is_number_integer(); });
    if (ranks) out.members = members->get<std::vector<int>>();
    if (!ranks || !std::is_sorted(out.members.begin(), out.members.end())) {
      return Status::Error("the daemon sent members that are not ascending ranks");
    }
  }
  const auto resume_step = reply.find("resume_step");
  if (resume_step != reply.end() && resume_step->is_number_integer() &&
      resume_step->get<std::int64_t>() >= 0) {
    Result<net::Frame> blob = upstream.Read(120s);
    if (!blob.ok()) return Status::Error("receiving the checkpoint: " + blob.status().message());
    auto decoded = store::DecodeCheckpoint(blob.value().payload);
    if (!decoded.ok()) {
      return Status::Error("the checkpoint to resume from: " + decoded.status().message());
    }
    out.resume = std::move(decoded).value();
  }
  return out;
}

// Tells the daemon this process is done, and waits for its acknowledgement.
Status SayDone(Upstream& upstream, WorkerStop stop, std::int64_t steps,
               const std::string& reason = "") {
  json done = {{"v", 1}, {"type", "worker_done"}, {"stop", WireName(stop)}, {"steps", steps}};
  if (!reason.empty()) done["reason"] = reason;
  Status said = upstream.Send(net::MessageType::kControl, done.dump(), 10s);
  if (!said.ok()) return said;
  Result<json> acknowledged = ReadReply(upstream, 30s);
  return acknowledged.ok() ? Status::Ok() : acknowledged.status();
}

// A job of [optimizer] type = "lbfgs": L-BFGS in this process (`engine` kLbfgs), or as the
// coordinator of Sandblaster's shards and workers (kSandblasterCoordinator).
int RunLbfgsReplica(Upstream& upstream, const Admitted& admitted, const runner::JobData& data,
                    const runner::Placement& placement, config::Engine engine) {
  LinePrinter printer(true);
  UpstreamRecorder recorder(upstream);
  runner::RunOptions options;
  options.stop = &g_stop;
  options.observer = &printer;
  const store::CheckpointData* resume = admitted.resume ? &*admitted.resume : nullptr;
  const Result<runner::LbfgsRunResult> ran =
      engine == config::Engine::kSandblasterCoordinator
          ? runner::RunSandblasterCoordinator(admitted.job, data, placement, recorder, options,
                                              resume)
          : runner::RunLbfgs(admitted.job, data, recorder, options, resume);
  if (!ran.ok()) return Fail(ran.status().message());
  if (!recorder.metrics_status().ok()) return Fail(recorder.metrics_status().message());
  const std::string end = runner::DescribeLbfgsEnd(ran.value());
  if (Status said = SayDone(upstream, FromStopReason(ran.value().why), ran.value().iterations, end);
      !said.ok()) {
    return Fail(said.message());
  }
  std::printf("%s\n", end.c_str());
  return ran.value().why == train::StopReason::kRequested ? kExitStopped : kExitCompleted;
}

// A sparse job (data.sparse): in this process, or as a replica of an async or sync job on its
// shards.
int RunSparseReplica(Upstream& upstream, const Admitted& admitted,
                     const runner::Placement& placement) {
  const config::JobConfig& job = admitted.job;
  auto data = runner::LoadSparseJobData(job);
  if (!data.ok()) return FailHopeless(upstream, WorkerStop::kNoData, data.status().message());
  LinePrinter printer(PrintsEvaluations(job, placement.rank));
  UpstreamRecorder recorder(upstream);
  runner::RunOptions options;
  options.stop = &g_stop;
  options.observer = &printer;
  options.checkpoints = config::WritesCheckpoints(job.cluster, placement.rank);
  const store::CheckpointData* resume = admitted.resume ? &*admitted.resume : nullptr;
  const Result<runner::SparseRunResult> ran =
      job.cluster.Servers() > 0
          ? runner::RunSparseReplica(job, data.value(), placement, recorder, options, resume)
          : runner::RunSparse(job, data.value(), recorder, options, resume);
  if (!ran.ok()) return FailTraining(upstream, ran.status());
  if (!recorder.metrics_status().ok()) return Fail(recorder.metrics_status().message());
  const WorkerStop stop = FromStopReason(ran.value().why);
  // Early stopping finishes as completed does; the reason the job shows says why and where.
  const std::string reason = ran.value().why == train::StopReason::kEarlyStopped
                                 ? ran.value().early_stopping.Describe(ran.value().steps)
                                 : "";
  if (Status said = SayDone(upstream, stop, ran.value().steps, reason); !said.ok()) {
    return Fail(said.message());
  }
  if (!reason.empty()) std::printf("%s\n", reason.c_str());
  std::printf("%s after %lld steps, %llu keys\n", std::string(WireName(stop)).c_str(),
              static_cast<long long>(ran.value().steps),
              static_cast<unsigned long long>(ran.value().keys));
  return ran.value().why == train::StopReason::kRequested ? kExitStopped : kExitCompleted;
}

// A replica, a Sandblaster worker or a Sandblaster coordinator: a process that reads the job's
// data.
int RunReplica(Upstream& upstream, const Admitted& admitted, const runner::Placement& placement) {
  const config::JobConfig& job = admitted.job;
  const config::Engine engine = config::EngineOf(job, placement.rank);
  const char* doing = "preparing its BLAS threads";
  try {
    // BLAS buffers first, while the address space is free (memory_limit.h).
    if (Result<int> blas = runner::PrepareBlas(job, placement); !blas.ok()) {
      return FailHopeless(upstream, WorkerStop::kOutOfMemory, blas.status().message());
    }
    const Result<std::string> precision = runner::UsePrecision(job);
    if (!precision.ok()) {
      return FailHopeless(upstream, WorkerStop::kUnsupportedCpu, precision.status().message());
    }
    if (!precision.value().empty()) std::printf("%s\n", precision.value().c_str());
    if (engine == config::Engine::kSparseSteps) {
      doing = "training a sparse model";
      return RunSparseReplica(upstream, admitted, placement);
    }
    doing = "reading the job's data";
    auto data = runner::LoadJobData(job);
    if (!data.ok()) return FailHopeless(upstream, WorkerStop::kNoData, data.status().message());
    if (engine == config::Engine::kSandblasterWorker) {
      doing = "computing work units";
      const Status worked = runner::RunSandblasterWorkerOfJob(job, data.value(), placement);
      if (!worked.ok()) return Fail(worked.message());
      if (Status said = SayDone(upstream, WorkerStop::kCompleted, 0); !said.ok())
        return Fail(said.message());
      std::printf("the coordinator has stopped the workers\n");
      return kExitCompleted;
    }
    if (engine == config::Engine::kLbfgs || engine == config::Engine::kSandblasterCoordinator) {
      doing = "running L-BFGS";
      return RunLbfgsReplica(upstream, admitted, data.value(), placement, engine);
    }
    doing = "building the model, its gradient and optimizer state";
    const std::optional<store::CheckpointData>& resume = admitted.resume;
    // An elastic job's replica regroups in place of failing; its session changes as it does.
    std::optional<runner::ElasticReplica> elastic;
    std::unique_ptr<runner::TrainingSession> alone;
    if (runner::RunsElastic(job)) {
      elastic.emplace(job, data.value(), placement,
                      RegroupOverChannel(upstream, RegroupTimeout(job)));
      const Status began =
          admitted.joining ? elastic->Join()
                           : elastic->Begin(resume ? &*resume : nullptr, admitted.members);
      if (!began.ok()) return Fail(began.message());
    } else {
      auto made = runner::TrainingSession::Make(job, data.value(), placement);
      if (!made.ok()) return Fail(made.status().message());
      alone = std::move(made).value();
      if (Status restored = runner::RestoreOrInit(resume ? &*resume : nullptr, alone->trainer());
          !restored.ok()) {
        return Fail(restored.message());
      }
      if (Status started = alone->Start(); !started.ok()) return Fail(started.message());
    }
    const auto current = [&]() -> runner::TrainingSession& {
      return elastic ? elastic->session() : *alone;
    };
    runner::TrainingSession& session = current();

    LinePrinter printer(PrintsEvaluations(job, placement.rank));
    runner::RunSubject subject = runner::SubjectOf(data.value());
    subject.optimizer = runner::OptimizerSettings(job);
    printer.OnStart(runner::ProgressOf(session.trainer()), subject,
                    resume.has_value() || admitted.joining);
    if (const std::string links = session.DescribeLinks(); !links.empty()) {
      std::printf("%s\n", links.c_str());
    }
    if (PrintsEvaluations(job, placement.rank)) {
      for (const std::string& line : runner::CompressionLines(job, data.value().spec)) {
        std::printf("%s\n", line.c_str());
      }
    }
    for (const std::string& line : session.LayerPathLines()) std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    doing = "training";
    UpstreamRecorder recorder(upstream);
    runner::RunOptions options;
    options.stop = &g_stop;
    options.observer = &printer;
    // Replicas agree; replica 0 (each of its partitions, its part) writes the job's checkpoints.
    options.checkpoints = config::WritesCheckpoints(job.cluster, placement.rank);
    options.capture = session.Capturer();
    const std::int64_t last_saved = resume ? resume->step : -1;
    if (elastic) {
      // A regroup notice, seen at a step boundary, ends this ring: every member then regroups.
      options.after_step = [&] {
        if (upstream.TakeRegroupNotice()) elastic->LeaveRing();
      };
    }
    const Result<train::StopReason> why =
        elastic ? elastic->Train(job.checkpoint, recorder, options, last_saved)
                : runner::TrainRecorded(session.trainer(), job.checkpoint, recorder, options,
                                        last_saved);
    if (!why.ok()) return FailTraining(upstream, why.status());
    if (Status finished = current().Finish(); !finished.ok()) return Fail(finished.message());
    if (!recorder.metrics_status().ok()) return Fail(recorder.metrics_status().message());
    // The final evaluation's per-class report, from the process that holds the whole model and
    // writes its checkpoints; a run stopped on request has no final evaluation.
    if (options.checkpoints && job.cluster.model_parallel == 1 &&
        why.value() != train::StopReason::kRequested) {
      doing = "making the per-class report";
      if (Status reported = runner::RecordClassReport(data.value(), current().trainer(), recorder);
          !reported.ok()) {
        std::printf("no per-class report: %s\n", reported.message().c_str());
      }
    }

    const std::int64_t steps = current().trainer().position().step;
    const WorkerStop stop = FromStopReason(why.value());
    // Early stopping finishes as completed does; the reason the job shows says why and where.
    const std::string reason = why.value() == train::StopReason::kEarlyStopped
                                   ? current().trainer().early_stopping().Describe(steps)
                                   : "";
    if (Status said = SayDone(upstream, stop, steps, reason); !said.ok()) {
      return Fail(said.message());
    }
    if (!reason.empty()) std::printf("%s\n", reason.c_str());
    std::printf("%s after %lld steps\n", std::string(WireName(stop)).c_str(),
                static_cast<long long>(steps));
    return why.value() == train::StopReason::kRequested ? kExitStopped : kExitCompleted;
  } catch (const std::bad_alloc&) {
    return FailHopeless(upstream, WorkerStop::kOutOfMemory, runner::OutOfMemory(doing, job));
  }
}

// A parameter-server shard: serves until every worker has left. A stop signal does not end it
// early — the workers stop (and take the final checkpoint, from the shards) first.
int RunShard(Upstream& upstream, const Admitted& admitted, const runner::Placement& placement) {
  const config::JobConfig& job = admitted.job;
  const config::Engine engine = config::EngineOf(job, placement.rank);
  const char* doing = "reading the model's shape";
  try {
    if (Status fits = runner::CheckMemoryLimit(job, 1); !fits.ok()) {
      return FailHopeless(upstream, WorkerStop::kOutOfMemory, fits.message());
    }
    UpstreamRecorder recorder(upstream);
    runner::MetricsToRecorder sink(recorder);
    if (engine == config::Engine::kSparseShard) {
      std::printf("sparse %s of %d serving %d workers\n",
                  config::DescribeProcess(job.cluster, placement.rank).c_str(),
                  job.cluster.Servers(), job.cluster.workers);
      std::fflush(stdout);
      doing = "serving its shard of a sparse model";
      if (Status served = runner::ServeSparseShardOfJob(job, placement, admitted.resume, sink);
          !served.ok()) {
        return Fail(served.message());
      }
      // Metrics that stopped reaching the daemon fail the shard, as they fail a replica.
      if (!recorder.metrics_status().ok()) return Fail(recorder.metrics_status().message());
      if (Status said = SayDone(upstream, WorkerStop::kCompleted, 0); !said.ok())
        return Fail(said.message());
      std::printf("every worker has left; shard done\n");
      return kExitCompleted;
    }
    auto spec = runner::ResolveJobShape(job);  // the model's shape, reading as little as it can
    if (!spec.ok()) return FailHopeless(upstream, WorkerStop::kNoData, spec.status().message());
    std::printf("%s of %d serving %d workers\n",
                config::DescribeProcess(job.cluster, placement.rank).c_str(), job.cluster.Servers(),
                job.cluster.workers);
    std::fflush(stdout);
    doing = "serving its shard";
    Status served =
        engine == config::Engine::kVectorShard
            ? runner::ServeSandblasterShard(job, spec.value(), placement)
            : runner::ServeShardOfJob(job, spec.value(), placement, admitted.resume, sink);
    if (!served.ok()) return Fail(served.message());
    if (!recorder.metrics_status().ok()) return Fail(recorder.metrics_status().message());
    if (Status said = SayDone(upstream, WorkerStop::kCompleted, 0); !said.ok()) {
      return Fail(said.message());
    }
    std::printf("every worker has left; shard done\n");
    return kExitCompleted;
  } catch (const std::bad_alloc&) {
    return FailHopeless(upstream, WorkerStop::kOutOfMemory, runner::OutOfMemory(doing, job));
  }
}

// The control connection to the job's coordinator, inherited as fd 3 (launch.h).
Result<net::FrameStream> CoordinatorConnection() {
  constexpr std::uint32_t kMaxPayload = 1u << 30;  // checkpoints to resume from
  struct stat st {};
  if (::fstat(server::kConnectionFd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    return Status::Error(
        "no coordinator connection on fd 3: job processes are started by "
        "dtraind or dtrain run, never by hand");
  }
  ::fcntl(server::kConnectionFd, F_SETFD, FD_CLOEXEC);  // nothing this process starts gets it
  net::FrameStream stream(server::kConnectionFd, kMaxPayload);
  stream.set_peer_name("the coordinator");
  return stream;
}

// A Slurm task's coordinator connection: the coordinator's TCP listener, turned into a worker
// channel (control_protocol.md, "Slurm tasks"); `data_host` becomes this end's address.
Result<net::FrameStream> ConnectToCoordinator(const std::string& address, std::string* data_host) {
  constexpr std::uint32_t kMaxPayload = 1u << 30;
  const std::optional<net::HostPort> to = net::SplitHostPort(address);
  if (!to) return Status::Error("--connect must be HOST:PORT, got " + address);
  Result<net::FrameStream> stream = net::FrameStream::ConnectTcp(to->host, to->port, 30s);
  if (!stream.ok()) {
    return Status::Error("cannot reach the coordinator at " + address + ": " +
                         stream.status().message());
  }
  if (Status channel = server::RequestWorkerChannel(stream.value(), 10s); !channel.ok()) {
    return Status::Error("the coordinator at " + address + ": " + channel.message());
  }
  *data_host = net::RouteSourceIPv4(to->host).value_or(*data_host);
  net::FrameStream channel(stream.value().Release(), kMaxPayload);
  channel.set_peer_name("the coordinator at " + address);
  return channel;
}

// WorkerMain's work; an exception is its caller's to report.
int Work(WorkerArgs args) {
  runner::AdaptToAddressSpaceLimit();  // before any thread exists
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (args.connect.empty() && ::getppid() != args.parent) {
    return Fail("the daemon that started this worker is gone");
  }
  math::CatchSignalsOffComputeThreads({SIGTERM, SIGINT, SIGUSR1}, OnWorkerStopSignal);

  Result<nlohmann::json> secret = ReadLaunchSecret();
  if (!secret.ok()) return Fail(secret.status().message());
  const std::string token = SecretString(secret.value(), "token").value_or("");
  Result<net::FrameStream> connected = args.connect.empty()
                                           ? CoordinatorConnection()
                                           : ConnectToCoordinator(args.connect, &args.data_host);
  if (!connected.ok()) return Fail(connected.status().message());
  Upstream upstream(std::move(connected).value(), args.job);
  upstream.set_sender(static_cast<std::uint32_t>(args.rank));
  // The data-plane sockets exist before the hello, so their ports can go into it: one for the
  // data-parallel group, one for the replica's partition ring (model parallelism).
  Result<dist::PeerListener> listener = dist::PeerListener::Open(args.data_host);
  if (!listener.ok()) return Fail(listener.status().message());
  Result<dist::PeerListener> partition_listener = dist::PeerListener::Open(args.data_host);
  if (!partition_listener.ok()) return Fail(partition_listener.status().message());
  const json hello = {{"v", 1},
                      {"type", "worker_hello"},
                      {"job", args.job},
                      {"rank", args.rank},
                      {"token", token},
                      {"data_host", args.data_host},
                      {"data_port", listener.value().port()},
                      {"partition_port", partition_listener.value().port()}};
  Status said = upstream.Send(net::MessageType::kControl, hello.dump(), 10s);
  if (!said.ok()) return Fail(said.message());
  // The answer comes once every process of the job has said hello (bounded by the daemon).
  Result<Admitted> admitted = ReadAdmission(upstream, 24h);
  if (!admitted.ok()) return Fail(admitted.status().message());
  // From here the coordinator expects a beat every heartbeat interval, whatever this process does.
  upstream.StartHeartbeats(HeartbeatInterval(admitted.value().job.cluster.heartbeat_timeout),
                           &g_stop);
  listener.value().RequireToken(admitted.value().data_token);
  partition_listener.value().RequireToken(admitted.value().data_token);
  const runner::Placement placement{args.rank,
                                    admitted.value().peers,
                                    &listener.value(),
                                    admitted.value().data_token,
                                    admitted.value().partition_peers,
                                    &partition_listener.value(),
                                    {}};
  if (config::RoleOf(admitted.value().job.cluster, args.rank).kind ==
      config::ProcessRole::Kind::kShard) {
    return RunShard(upstream, admitted.value(), placement);
  }
  return RunReplica(upstream, admitted.value(), placement);
}

}  // namespace

int WorkerMain(const WorkerArgs& args) {
  try {
    return Work(args);
  } catch (const std::exception& e) {  // a thread or buffer the process could not get
    return Fail(std::string("cannot go on: ") + e.what());
  }
}

}  // namespace dtrain::worker
