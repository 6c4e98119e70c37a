#include "daemon/worker/control_reply.h"

#include <string>

namespace dtrain::worker {

using json = nlohmann::json;

Result<json> ReadReply(Upstream& upstream, std::chrono::milliseconds timeout) {
  Result<net::Frame> frame = upstream.Read(timeout);
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

Result<PeerTable> ParsePeerTable(const json& reply) {
  PeerTable table;
  const auto peers = reply.find("peers");
  if (peers == reply.end() || !peers->is_array()) return table;
  for (const json& p : *peers) {
    if (!p.is_object() || !p.contains("host") || !p["host"].is_string() || !p.contains("port") ||
        !p["port"].is_number_unsigned()) {
      return Status::Error("malformed peer table from the daemon");
    }
    table.peers.push_back({p["host"].get<std::string>(), p["port"].get<std::uint16_t>()});
    const auto partition_port = p.find("partition_port");
    table.partition_peers.push_back(
        {p["host"].get<std::string>(),
         partition_port != p.end() && partition_port->is_number_unsigned()
             ? partition_port->get<std::uint16_t>()
             : std::uint16_t{0}});
  }
  return table;
}

}  // namespace dtrain::worker
