#include "daemon/worker/worker_main.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "config/job_file.h"
#include "core/net/frame_stream.h"
#include "daemon/runner/progress_lines.h"
#include "daemon/runner/recorded_training.h"
#include "daemon/runner/trainer_checkpoint.h"
#include "daemon/runner/training_session.h"
#include "daemon/worker/upstream_recorder.h"

namespace dtrain::worker {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr int kExitCompleted = 0;
constexpr int kExitFailed = 1;
constexpr int kExitStopped = 130;

std::atomic<bool> g_stop{false};
extern "C" void OnStopSignal(int) { g_stop.store(true); }

int Fail(const std::string& message) {
  std::fprintf(stderr, "worker: %s\n", message.c_str());
  return kExitFailed;
}

// Prints the run's plain progress lines on stdout, flushed line by line (it is a pipe).
class LinePrinter final : public runner::RunObserver {
 public:
  void OnStart(const train::Trainer& trainer, const runner::JobData& data, bool resumed) override {
    eval_name_ = data.eval_name;
    Print(runner::StartLine(trainer, data, resumed));
  }
  void OnMetrics(const train::Trainer& trainer,
                 std::span<const train::MetricPoint> points) override {
    if (auto line = runner::EvalLine(trainer, points, eval_name_)) Print(*line);
  }
  void OnCheckpoint(const train::Trainer& trainer) override {
    Print("checkpoint at step " + std::to_string(trainer.position().step));
  }

 private:
  static void Print(const std::string& line) {
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  std::string eval_name_;
};

// Reads a control reply and checks "ok".
Result<json> ReadReply(net::FrameStream& stream, std::chrono::milliseconds timeout) {
  Result<net::Frame> frame = stream.Read(timeout);
  if (!frame.ok()) return frame.status();
  json reply = json::parse(frame.value().payload, nullptr, false);
  if (!reply.is_object()) return Status::Error("malformed reply from the daemon");
  const auto ok = reply.find("ok");
  if (ok == reply.end() || !ok->is_boolean() || !ok->get<bool>()) {
    return Status::Error(reply.contains("error") && reply["error"].is_string()
                             ? reply["error"].get<std::string>()
                             : "the daemon refused");
  }
  return reply;
}

}  // namespace

int WorkerMain(const WorkerArgs& args) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != args.parent) return Fail("the daemon that started this worker is gone");
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGTERM, &action, nullptr);
  ::sigaction(SIGINT, &action, nullptr);

  auto connected = net::FrameStream::ConnectUnix(args.socket, 10s, 1u << 30);
  if (!connected.ok()) return Fail(connected.status().message());
  net::FrameStream& stream = connected.value();
  stream.set_sender(static_cast<std::uint32_t>(args.rank));
  const json hello = {{"v", 1}, {"type", "worker_hello"}, {"job", args.job},
                      {"rank", args.rank}, {"token", args.token}};
  Status said = stream.WriteString(net::MessageType::kControl, static_cast<std::uint64_t>(args.job),
                                   0, hello.dump(), 10s);
  if (!said.ok()) return Fail(said.message());
  Result<json> admitted = ReadReply(stream, 60s);
  if (!admitted.ok()) return Fail("not admitted: " + admitted.status().message());
  const json& reply = admitted.value();
  if (!reply.contains("spec_toml") || !reply["spec_toml"].is_string()) {
    return Fail("the daemon sent no job file");
  }
  const std::string display = "job " + std::to_string(args.job);
  config::LoadResult loaded =
      config::ParseJobText(reply["spec_toml"].get<std::string>(), display, {}, "/");
  if (!loaded.ok()) return Fail(config::FormatDiagnostic(loaded.diagnostics.front()));
  const config::JobConfig& job = *loaded.job;

  std::optional<store::CheckpointData> resume;
  const auto resume_step = reply.find("resume_step");
  if (resume_step != reply.end() && resume_step->is_number_integer() &&
      resume_step->get<std::int64_t>() >= 0) {
    Result<net::Frame> blob = stream.Read(120s);
    if (!blob.ok()) return Fail("receiving the checkpoint: " + blob.status().message());
    auto decoded = store::DecodeCheckpoint(blob.value().payload);
    if (!decoded.ok()) return Fail("the checkpoint to resume from: " + decoded.status().message());
    resume = std::move(decoded).value();
  }

  auto data = runner::LoadJobData(job);
  if (!data.ok()) return Fail(data.status().message());
  std::unique_ptr<runner::TrainingSession> session = runner::MakeTrainingSession(job, data.value());
  train::Trainer& trainer = session->trainer;
  if (resume) {
    Status restored = runner::RestoreCheckpoint(*resume, trainer);
    if (!restored.ok()) return Fail(restored.message());
  } else {
    trainer.InitParams();
  }

  LinePrinter printer;
  printer.OnStart(trainer, data.value(), resume.has_value());
  UpstreamRecorder recorder(stream, args.job);
  const Result<train::StopReason> why = runner::TrainRecorded(
      trainer, job.checkpoint, recorder, {&g_stop, &printer}, resume ? resume->step : -1);
  if (!why.ok()) return Fail(why.status().message());
  if (!recorder.metrics_status().ok()) return Fail(recorder.metrics_status().message());

  const char* stop = why.value() == train::StopReason::kCompleted       ? "completed"
                     : why.value() == train::StopReason::kTargetReached ? "target"
                                                                         : "requested";
  const json done = {{"v", 1}, {"type", "worker_done"}, {"stop", stop},
                     {"steps", trainer.position().step}};
  said = stream.WriteString(net::MessageType::kControl, static_cast<std::uint64_t>(args.job), 0,
                            done.dump(), 10s);
  if (!said.ok()) return Fail(said.message());
  Result<json> acknowledged = ReadReply(stream, 30s);
  if (!acknowledged.ok()) return Fail(acknowledged.status().message());
  std::printf("%s after %lld steps\n", stop, static_cast<long long>(trainer.position().step));
  return why.value() == train::StopReason::kRequested ? kExitStopped : kExitCompleted;
}

}  // namespace dtrain::worker
