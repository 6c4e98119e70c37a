#include "daemon/server/worker_channel_request.h"

#include <nlohmann/json.hpp>

namespace dtrain::server {

Status RequestWorkerChannel(net::FrameStream& stream, std::chrono::milliseconds timeout) {
  const nlohmann::json ask = {{"v", 1}, {"type", "worker_channel"}};
  if (Status sent = stream.WriteString(net::MessageType::kControl, 0, 0, ask.dump(), timeout);
      !sent.ok()) {
    return sent;
  }
  Result<net::Frame> answer = stream.Read(timeout);
  if (!answer.ok()) return answer.status();
  const nlohmann::json reply = nlohmann::json::parse(answer.value().payload, nullptr, false);
  if (!reply.is_object() || !reply.value("ok", false)) {
    return Status::Error("it refused a worker channel");
  }
  return Status::Ok();
}

}  // namespace dtrain::server
