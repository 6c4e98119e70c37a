#include "daemon/worker/upstream_recorder.h"

#include <nlohmann/json.hpp>

#include "daemon/store/metric_value.h"

namespace dtrain::worker {
namespace {

using namespace std::chrono_literals;
constexpr auto kSendTimeout = 30s;
constexpr auto kCommitTimeout = 120s;  // a durable commit of a large checkpoint

}  // namespace

void UpstreamRecorder::RecordMetrics(std::span<const train::MetricPoint> points) {
  if (!metrics_status_.ok()) return;
  nlohmann::json list = nlohmann::json::array();
  for (const train::MetricPoint& p : points) {
    list.push_back({{"step", p.step},
                    {"epoch", p.epoch},
                    {"name", p.name},
                    {"value", store::MetricValueJson(p.value)}});
  }
  const std::string payload = nlohmann::json{{"points", std::move(list)}}.dump();
  metrics_status_ = upstream_.Send(net::MessageType::kMetrics, payload, kSendTimeout);
}

Status UpstreamRecorder::SaveCheckpoint(const store::CheckpointView& checkpoint) {
  return SendAndAwaitCommit(net::MessageType::kCheckpoint, store::EncodeCheckpoint(checkpoint),
                            "a checkpoint");
}

Status UpstreamRecorder::SaveBestModel(const store::BestModelInfo& best,
                                       const store::CheckpointView& model) {
  return SendAndAwaitCommit(net::MessageType::kBestModel,
                            store::EncodeBestModelFrame(best.value, model), "the best model");
}

Status UpstreamRecorder::SaveClassReport(std::int64_t step, const train::ClassReport& report) {
  const nlohmann::json message = {
      {"v", 1},
      {"type", "class_report"},
      {"step", step},
      {"confusion", nlohmann::json::parse(train::ConfusionRowsJson(report))}};
  return SendAndAwaitCommit(net::MessageType::kControl, message.dump(), "the per-class report");
}

Status UpstreamRecorder::SendAndAwaitCommit(net::MessageType type, const std::string& payload,
                                            std::string_view what) {
  Status sent = upstream_.Send(type, payload, kSendTimeout);
  if (!sent.ok()) return sent;
  Result<net::Frame> reply = upstream_.Read(kCommitTimeout);
  if (!reply.ok()) return reply.status();
  const nlohmann::json ack = nlohmann::json::parse(reply.value().payload, nullptr, false);
  if (!ack.is_object() || !ack.contains("ok") || !ack["ok"].is_boolean()) {
    return Status::Error("the daemon's reply to " + std::string(what) + " is malformed");
  }
  if (!ack["ok"].get<bool>()) {
    const auto error = ack.find("error");
    return Status::Error(error != ack.end() && error->is_string()
                             ? error->get<std::string>()
                             : "the daemon refused " + std::string(what));
  }
  return Status::Ok();
}

}  // namespace dtrain::worker
