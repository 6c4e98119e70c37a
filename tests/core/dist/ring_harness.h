// Test helpers for core/dist: rings over either transport, per-rank inputs whose sum depends on
// the order of addition (so bitwise agreement between ranks is not an accident), the exact
// reference sum, one RingAllReduce per rank, ranks as threads, and message predicates.
//
//   std::vector<RingLinks> ring = MakeRing(Transport::kTcp, 4);
//   std::vector<Status> s = RunRanks(4, [&](int r) { return ...; });
//
// One thread at a time, except RunRanks's function, which runs on one thread per rank.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/text_checks.h"
#include "core/dist/link.h"
#include "core/dist/local_link.h"
#include "core/dist/loopback_ring.h"
#include "core/dist/ring_allreduce.h"
#include "core/status.h"

namespace dtrain::dist::testing {

using namespace std::chrono_literals;

// kShm: JoinRing's shared-memory links (ShmLink), here between threads of one process.
enum class Transport { kLocal, kTcp, kShm };

inline std::ostream& operator<<(std::ostream& out, Transport t) {
  return out << (t == Transport::kLocal ? "local" : t == Transport::kTcp ? "tcp" : "shm");
}

inline const Transport kTransports[] = {Transport::kLocal, Transport::kTcp, Transport::kShm};

inline std::vector<RingLinks> MakeRing(Transport transport, int world) {
  if (transport == Transport::kLocal) return MakeLocalRing(world);
  Result<std::vector<RingLinks>> ring = LoopbackRing::ConnectAll(
      world, 10s, transport == Transport::kShm ? LinkTransport::kAuto : LinkTransport::kTcp);
  BOOST_TEST_REQUIRE(ring.ok(), ring.status().message());
  return std::move(ring).value();
}

// Rank `rank`'s input for op `op`: values in ±[2^-6, 2^6), so sums round differently in
// different orders.
inline std::vector<float> Input(int rank, std::size_t size, std::uint32_t op = 0) {
  std::vector<float> v(size);
  std::uint64_t state = 0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(rank) + 1) + op;
  for (float& x : v) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint32_t bits = static_cast<std::uint32_t>(state >> 32);
    const float mantissa = 1.0f + static_cast<float>(bits & 0xFFFFF) / static_cast<float>(1 << 20);
    const int exponent = static_cast<int>((bits >> 20) % 13) - 6;
    x = std::ldexp((bits >> 31) ? -mantissa : mantissa, exponent);
  }
  return v;
}

// The exact sum (in double) of every rank's input, and the bound on a float sum's error.
struct Reference {
  std::vector<double> sum;
  std::vector<double> tolerance;
};

inline Reference ReferenceSum(int world, std::size_t size, std::uint32_t op = 0) {
  Reference ref{std::vector<double>(size, 0.0), std::vector<double>(size, 0.0)};
  for (int r = 0; r < world; ++r) {
    const std::vector<float> in = Input(r, size, op);
    for (std::size_t i = 0; i < size; ++i) {
      ref.sum[i] += in[i];
      ref.tolerance[i] += std::fabs(in[i]);
    }
  }
  // world - 1 roundings, each at most half an ulp of a partial sum bounded by sum |x|.
  for (double& t : ref.tolerance) t *= static_cast<double>(world) * 0x1p-24;
  return ref;
}

// How many values are further from `expected` (times `scale`) than its tolerance.
inline std::size_t CountOutside(const std::vector<float>& got, const Reference& expected,
                                double scale = 1.0) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double want = expected.sum[i] * scale;
    if (std::fabs(static_cast<double>(got[i]) - want) > expected.tolerance[i] * scale) ++bad;
  }
  return bad;
}

inline bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// One RingAllReduce per rank over `links`, kept across ops like a training loop keeps it.
struct Ring {
  Ring(std::vector<RingLinks> ring_links, RingOptions options) : links(std::move(ring_links)) {
    const int world = static_cast<int>(links.size());
    for (int r = 0; r < world; ++r) {
      const RingLinks& l = links[static_cast<std::size_t>(r)];
      ranks.push_back(std::make_unique<RingAllReduce>(r, world, l.left, l.right, options));
    }
  }
  int world() const { return static_cast<int>(ranks.size()); }

  std::vector<RingLinks> links;
  std::vector<std::unique_ptr<RingAllReduce>> ranks;
};

// A link that passes every call on to `inner` (which must outlive it): the base of test links
// that change what one call does, e.g. count or fail sends.
class ForwardingLink : public Link {
 public:
  explicit ForwardingLink(Link* inner) : inner_(inner) {}
  Status Send(std::uint32_t tag, std::span<const float> data, Deadline deadline) override {
    return inner_->Send(tag, data, deadline);
  }
  Result<std::uint32_t> RecvAnyTag(std::span<float> out, Deadline deadline) override {
    return inner_->RecvAnyTag(out, deadline);
  }
  bool Readable() override { return inner_->Readable(); }
  void Close() override { inner_->Close(); }
  const std::string& peer() const override { return inner_->peer(); }

 private:
  Link* const inner_;
};

// What a forked rank wrote to its pipe, and how it ended (waitpid's status).
struct ForkedRank {
  std::string output;
  int wait_status = 0;
};

// Runs fn(rank, fd) in `world` forked processes, rank r in the r-th; fn writes what it reports to
// `fd` and returns the child's exit code. Returns each rank's output and status once all ended.
inline std::vector<ForkedRank> ForkRanks(int world, const std::function<int(int, int)>& fn) {
  std::vector<pid_t> children;
  std::vector<int> pipes;
  for (int r = 0; r < world; ++r) {
    int fds[2];
    BOOST_REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      ::_exit(fn(r, fds[1]));
    }
    ::close(fds[1]);
    children.push_back(pid);
    pipes.push_back(fds[0]);
  }
  std::vector<ForkedRank> ranks(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    ForkedRank& rank = ranks[static_cast<std::size_t>(r)];
    char buf[4096];
    ssize_t n = 0;
    while ((n = ::read(pipes[r], buf, sizeof buf)) > 0) {
      rank.output.append(buf, static_cast<std::size_t>(n));
    }
    ::close(pipes[r]);
    ::waitpid(children[r], &rank.wait_status, 0);
  }
  return ranks;
}

// Runs fn(rank) for every rank on its own thread; returns what each returned.
inline std::vector<Status> RunRanks(int world, const std::function<Status(int)>& fn) {
  std::vector<Status> results(static_cast<std::size_t>(world));
  std::vector<std::jthread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] { results[static_cast<std::size_t>(r)] = fn(r); });
  }
  threads.clear();  // joins
  return results;
}

// Each rank's result of one all-reduce, and the bytes each sent.
struct Reduced {
  std::vector<std::vector<float>> data;
  std::vector<std::uint64_t> bytes_sent;
};

// Every rank of `ring` reduces Input(rank, size, op), by the sum or the mean.
inline Reduced ReduceOnce(Ring& ring, std::size_t size, bool mean, std::uint32_t op) {
  Reduced out{std::vector<std::vector<float>>(static_cast<std::size_t>(ring.world())),
              std::vector<std::uint64_t>(static_cast<std::size_t>(ring.world()))};
  const std::vector<Status> status = RunRanks(ring.world(), [&](int r) {
    const std::size_t i = static_cast<std::size_t>(r);
    out.data[i] = Input(r, size, op);
    RingAllReduce& rank = *ring.ranks[i];
    Status s = mean ? rank.AllReduceMean(out.data[i], op) : rank.AllReduceSum(out.data[i], op);
    out.bytes_sent[i] = rank.last_op().bytes_sent;
    return s;
  });
  for (const Status& s : status) BOOST_TEST_REQUIRE(s.ok(), s.message());
  return out;
}

// Counts the floats sent over the link it passes them on to.
class CountingLink final : public ForwardingLink {
 public:
  using ForwardingLink::ForwardingLink;
  Status Send(std::uint32_t tag, std::span<const float> data, Deadline deadline) override {
    floats_sent += data.size();
    return ForwardingLink::Send(tag, data, deadline);
  }

  std::size_t floats_sent = 0;  // read once the op's threads are joined
};

// A ring of `world` in-process ranks whose links count what each rank sends each way.
struct CountedRing {
  CountedRing(int world, RingOptions options) : inner(MakeRing(Transport::kLocal, world)) {
    std::vector<RingLinks> counted;
    for (const RingLinks& l : inner) {
      left.push_back(std::make_unique<CountingLink>(l.left));
      right.push_back(std::make_unique<CountingLink>(l.right));
      counted.push_back({.left = left.back().get(), .right = right.back().get(), .owned = {}});
    }
    ring = std::make_unique<Ring>(std::move(counted), options);
  }

  std::vector<RingLinks> inner;
  std::vector<std::unique_ptr<CountingLink>> left, right;  // by rank
  std::unique_ptr<Ring> ring;
};

// Seconds since `start`, for "< 30 s: no hang" bounds.
inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using dtrain::testing::Mentions;

}  // namespace dtrain::dist::testing
