// The coordinator's answers on a worker's channel (control_protocol.md): reading one and checking
// "ok", and the peer table an admission or a regroup answer carries.
//
//   Result<nlohmann::json> reply = ReadReply(upstream, 30s);   // "ok": true, else its "error"
//   Result<PeerTable> peers = ParsePeerTable(reply.value());
//
// Pure parsing past the read; one thread at a time (Upstream's reader).
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/dist/peer_links.h"
#include "core/status.h"
#include "daemon/worker/upstream.h"

namespace dtrain::worker {

// Reads a control reply and checks "ok": the reply, or its "error" as the error.
Result<nlohmann::json> ReadReply(Upstream& upstream, std::chrono::milliseconds timeout);

// Every process's addresses, by rank: its data-plane listener, and its partition ring's (port 0
// where the reply names none).
struct PeerTable {
  std::vector<dist::Endpoint> peers;
  std::vector<dist::Endpoint> partition_peers;
};
// The reply's "peers" (empty tables where it has none); an error for a malformed entry.
Result<PeerTable> ParsePeerTable(const nlohmann::json& reply);

}  // namespace dtrain::worker
