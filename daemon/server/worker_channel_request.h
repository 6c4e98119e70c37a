// The client's side of `worker_channel` (daemon/control_protocol.md): asks the daemon at the
// other end of a connection — authenticated with the cluster key by a peer daemon, or not at
// all by a Slurm task — to make it a worker channel, which then carries one worker's hello and
// its messages. Blocking, bounded by `timeout` per frame; one thread per stream at a time.
//
//   if (Status s = RequestWorkerChannel(stream, 10s); !s.ok()) ...
#pragma once

#include <chrono>

#include "core/net/frame_stream.h"
#include "core/status.h"

namespace dtrain::server {

// An error when the connection failed or the daemon refused.
Status RequestWorkerChannel(net::FrameStream& stream, std::chrono::milliseconds timeout);

}  // namespace dtrain::server
