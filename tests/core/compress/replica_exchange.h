// An in-memory GradientExchange for compressor tests: `world` replicas as threads that meet at a
// std::barrier. Mean sums the replicas' data in rank order and divides by world (the same bits on
// every replica); Gather copies each replica's own block to the others. With one replica both
// leave the data as it is.
//
//   std::vector<Status> s = RunReplicas(3, [&](int rank, GradientExchange& exchange) {
//     return compressors[rank].Exchange(step, grads[rank], exchange);
//   });
#pragma once

#include <algorithm>
#include <barrier>
#include <cstddef>
#include <functional>
#include <span>
#include <thread>
#include <vector>

#include "core/compress/gradient_compressor.h"

namespace dtrain::compress {

class ReplicaExchange : public GradientExchange {
 public:
  // What the replicas share: each one's data of the current call, and the barrier.
  struct Shared {
    explicit Shared(int world) : meeting(world), data(static_cast<std::size_t>(world)) {}
    std::barrier<> meeting;
    std::vector<std::span<float>> data;
  };

  ReplicaExchange(Shared& shared, int rank) : shared_(shared), rank_(rank) {}
  int rank() const override { return rank_; }
  int world() const override { return static_cast<int>(shared_.data.size()); }

  Status Mean(std::span<float> data) override {
    Publish(data);
    std::vector<float> mean(data.size());
    for (std::size_t i = 0; i < data.size(); ++i) {
      float sum = 0.0f;
      for (const std::span<float> replica : shared_.data) sum += replica[i];
      mean[i] = sum / static_cast<float>(world());
    }
    shared_.meeting.arrive_and_wait();  // everyone has read everyone's data
    std::ranges::copy(mean, data.begin());
    return Status::Ok();
  }

  Status Gather(std::span<float> blocks) override {
    Publish(blocks);
    const std::size_t block = blocks.size() / shared_.data.size();
    for (std::size_t r = 0; r < shared_.data.size(); ++r) {
      if (r == static_cast<std::size_t>(rank_)) continue;
      std::ranges::copy(shared_.data[r].subspan(r * block, block),
                        blocks.subspan(r * block).begin());
    }
    shared_.meeting.arrive_and_wait();
    return Status::Ok();
  }

 private:
  void Publish(std::span<float> data) {
    shared_.data[static_cast<std::size_t>(rank_)] = data;
    shared_.meeting.arrive_and_wait();
  }

  Shared& shared_;
  int rank_;
};

// Runs body(rank, exchange) for each of `world` replicas, each on its own thread; their statuses.
inline std::vector<Status> RunReplicas(int world,
                                       const std::function<Status(int, GradientExchange&)>& body) {
  ReplicaExchange::Shared shared(world);
  std::vector<Status> statuses(static_cast<std::size_t>(world));
  {
    std::vector<std::jthread> threads;
    for (int rank = 0; rank < world; ++rank) {
      threads.emplace_back([&, rank] {
        ReplicaExchange exchange(shared, rank);
        statuses[static_cast<std::size_t>(rank)] = body(rank, exchange);
      });
    }
  }
  return statuses;
}

}  // namespace dtrain::compress
