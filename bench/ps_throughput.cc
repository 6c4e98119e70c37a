// Asynchronous parameter-server throughput: 4 workers push a 1M-parameter gradient to 2 shards
// and pull the parameters back, as fast as they can, over TCP on loopback and over shared memory
// (ShmLink, what a job's links between processes of one host use by default; threads of this
// process, each with its own links). Prints pushes + pulls per second over each, and beside them
// the bytes per second that represents against a raw TCP stream of the same bytes between two
// threads of this run (the ratio is what to compare across machines; absolute figures drift).
//
//   build/bench/bench_ps_throughput [SECONDS]   (default 5 per measurement)
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "core/dist/parameter_shard.h"
#include "core/dist/peer_links.h"
#include "core/dist/ps_client.h"
#include "core/dist/shard_ranges.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kParams = 1 << 20;
constexpr int kWorkers = 4;
constexpr int kShards = 2;

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s: %s\n", what, s.message().c_str());
    std::exit(1);
  }
}

// Pushes + pulls per second of kWorkers workers against kShards async shards.
double PsOpsPerSecond(double seconds, dist::LinkTransport transport) {
  std::vector<dist::PeerListener> listeners;
  std::vector<dist::Endpoint> shards;
  for (int s = 0; s < kShards; ++s) {
    auto l = dist::PeerListener::Open("127.0.0.1");
    Check(l.status(), "listen");
    shards.push_back({"127.0.0.1", l.value().port()});
    listeners.push_back(std::move(l).value());
  }
  const auto ranges = dist::ShardRanges(kParams, kShards);
  const auto timeout = std::chrono::milliseconds(60000);
  std::vector<std::thread> servers;
  for (int s = 0; s < kShards; ++s) {
    servers.emplace_back([&, s] {
      dist::ParameterShard shard({.shard = s, .shards = kShards, .begin = ranges[s].begin,
                                  .end = ranges[s].end, .num_params = kParams,
                                  .workers = kWorkers, .mode = dist::PsMode::kAsync,
                                  .max_staleness = 0, .optimizer = {}, .timeout = timeout});
      std::vector<float> init(ranges[s].size(), 0.0f);
      Check(shard.Load(init), "load");
      std::vector<std::unique_ptr<dist::Link>> owned(kWorkers);
      std::vector<dist::Link*> links(kWorkers);
      for (int i = 0; i < kWorkers; ++i) {
        auto in = listeners[s].Accept(Clock::now() + timeout);
        Check(in.status(), "accept");
        const int rank = static_cast<int>(in.value().id);
        auto link = dist::MakeLink(std::move(in.value().stream), transport,
                                   dist::ShmRole::kOpener, kWorkers + s, rank, "",
                                   Clock::now() + timeout);
        Check(link.status(), "link");
        links[rank] = link.value().get();
        owned[rank] = std::move(link).value();
      }
      Check(shard.Serve(links), "serve");
    });
  }
  std::vector<std::uint64_t> ops(kWorkers, 0);
  std::vector<std::thread> workers;
  const auto start = Clock::now();
  for (int r = 0; r < kWorkers; ++r) {
    workers.emplace_back([&, r] {
      std::vector<std::unique_ptr<dist::Link>> owned;
      std::vector<dist::Link*> links;
      for (int s = 0; s < kShards; ++s) {
        auto link = dist::ConnectLink(shards[s], r, kWorkers + s, "shard " + std::to_string(s),
                                      Clock::now() + timeout, "", transport);
        Check(link.status(), "connect");
        links.push_back(link.value().get());
        owned.push_back(std::move(link).value());
      }
      dist::PsClient client(links, {.rank = r, .workers = kWorkers, .num_params = kParams,
                                    .mode = dist::PsMode::kAsync, .max_staleness = 0,
                                    .timeout = timeout});
      std::vector<float> params(kParams), grad(kParams, 1e-6f);
      std::vector<std::uint64_t> clocks(kShards, 0);
      Check(client.Hello(params, clocks), "hello");
      std::uint64_t clock = 0;
      const auto end = Clock::now() + std::chrono::duration<double>(seconds);
      while (Clock::now() < end) {
        Check(client.Push(clock++, grad, 0.01f, clocks), "push");
        Check(client.Fetch(0, params, clocks), "fetch");
        ops[r] += 2;
      }
      Check(client.Goodbye(clock), "goodbye");
    });
  }
  for (std::thread& t : workers) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  for (std::thread& t : servers) t.join();
  std::uint64_t total = 0;
  for (std::uint64_t o : ops) total += o;
  return static_cast<double>(total) / elapsed;
}

// Bytes per second of one raw TCP stream of 4 MiB messages between two threads.
double RawTcpBytesPerSecond(double seconds) {
  auto l = dist::PeerListener::Open("127.0.0.1");
  Check(l.status(), "listen");
  const dist::Endpoint to{"127.0.0.1", l.value().port()};
  const auto timeout = std::chrono::milliseconds(60000);
  std::vector<float> buffer(kParams);
  double bytes = 0;
  const auto start = Clock::now();
  std::thread receiver([&] {
    auto link = dist::AcceptPeer(l.value(), 1, 0, "", Clock::now() + timeout);
    Check(link.status(), "accept");
    std::vector<float> in(kParams);
    while (true) {
      auto tag = link.value()->RecvAnyTag(in, Clock::now() + timeout);
      Check(tag.status(), "recv");
      if (tag.value() == 1) break;
    }
  });
  auto link =
      dist::ConnectLink(to, 0, 1, "", Clock::now() + timeout, "", dist::LinkTransport::kTcp);
  Check(link.status(), "connect");
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < end) {
    Check(link.value()->Send(0, buffer, Clock::now() + timeout), "send");
    bytes += static_cast<double>(buffer.size() * sizeof(float));
  }
  Check(link.value()->Send(1, buffer, Clock::now() + timeout), "send");
  receiver.join();
  return bytes / std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
  const double raw = RawTcpBytesPerSecond(seconds);
  std::printf("raw TCP stream, one pair, 4 MiB messages: %.2f GB/s\n", raw / 1e9);
  double tcp_ops = 0.0;
  for (const auto transport : {dist::LinkTransport::kTcp, dist::LinkTransport::kAuto}) {
    const double ops = PsOpsPerSecond(seconds, transport);
    // Each push or pull moves the whole 4 MiB vector once (in two shard slices).
    const double ps_bytes = ops * kParams * sizeof(float);
    const bool tcp = transport == dist::LinkTransport::kTcp;
    if (tcp) tcp_ops = ops;
    std::printf("async PS over %s, %d workers x %d shards, %zu parameters: %.1f pushes+pulls/s "
                "(%.2f GB/s moved; / raw stream %.2f)",
                tcp ? "tcp" : "shared memory", kWorkers, kShards, kParams, ops, ps_bytes / 1e9,
                ps_bytes / raw);
    if (tcp) {
      std::printf("\n");
    } else {
      std::printf("; shm / tcp %.2f\n", ops / tcp_ops);
    }
  }
  return 0;
}
