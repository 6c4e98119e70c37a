// Timing helpers shared by the loopback benchmarks: processes forked side by side, the ring
// all-reduce between them, and the raw TCP exchange that bounds what any all-reduce over loopback
// can do on this machine.
//
//   double ring = RingSeconds(2, floats, /*reps=*/50, {});      // seconds per op, median
//   double raw = RawSeconds(floats * sizeof(float), 50, 0);     // the same bytes, no framing
//
// Every function returns NaN when a process failed (after saying why on stderr). The ring's
// listening sockets are made before forking, so the ranks can connect in any order.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "bench/median.h"
#include "core/dist/peer_links.h"
#include "core/dist/ring_allreduce.h"

namespace dtrain::bench {

// Runs fn(rank) in `n` forked processes; returns what rank 0's fn returned, or NaN when any
// process failed.
double InProcesses(int n, const std::function<double(int)>& fn);

// Seconds per RingAllReduce::AllReduceMean of `floats` floats among `n` processes over loopback
// TCP (or, with LinkTransport::kAuto, over shared memory: ShmLink), median over `reps` ops after
// one warm-up op. `checksums` false: the TCP links send without CRC ([cluster] checksum = false).
double RingSeconds(int n, std::size_t floats, int reps, dist::RingOptions options,
                   dist::LinkTransport transport = dist::LinkTransport::kTcp,
                   bool checksums = true);

// Seconds per full-duplex exchange of `bytes` each way between two processes, each driving its
// socket from one thread with non-blocking send and recv under poll (no framing, no thread
// hand-offs): the traffic of a 2-process ring at loopback's own speed. With `crc_piece` > 0 each
// side also checksums what it sends and receives in pieces of that many bytes, as frames do.
double RawSeconds(std::size_t bytes, int reps, std::size_t crc_piece);

}  // namespace dtrain::bench
