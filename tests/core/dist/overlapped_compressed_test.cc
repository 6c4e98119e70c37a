// Overlapped compressed sync (OverlappedSyncStrategy with a GradientCompressor): replicas that
// compress and exchange their gradients bucket by bucket during the pass (over TCP, or shared
// memory links) end bitwise identical, with the bits of the same per-bucket compression run after
// the pass, and with two replicas (and for bf16 and topk, whose gathered sums do not depend on the
// buckets, with three) with the bits of the whole-gradient compressed exchange
// (CompressedSyncStrategy); a warm-up as long as the run is the uncompressed overlapped ring to the
// bit; stop and checkpoint votes reach every replica at the same step; the checkpointed state is
// laid out as CompressedSyncStrategy's and resumes exactly with other buckets.
#include <boost/test/unit_test.hpp>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compression_harness.h"
#include "core/compress/compression_plan.h"
#include "core/compress/gradient_compressor.h"
#include "core/dist/compressed_sync_strategy.h"
#include "core/dist/compressing_ring.h"
#include "core/dist/gradient_buckets.h"
#include "core/dist/overlapped_sync_strategy.h"
#include "core/math/elementwise.h"
#include "core/math/gemm.h"
#include "replica_harness.h"
#include "ring_harness.h"

namespace dtrain::dist {
namespace overlapped_compressed_test {

using testing::Blobs;
using testing::CompressedSync;
using testing::OneEpochPerReplica;
using testing::TrainReplicasAsThreads;
using testing::WideSpec;
constexpr const auto& kMethods = testing::kLossyMethods;

// WideSpec's buckets: one per layer with parameters (3), or of at least `floats` floats.
std::vector<GradientBucket> Buckets(const model::Model& model, std::size_t floats = 1) {
  return PlanBuckets(LayerStarts(model), model.NumParams(), floats);
}

std::unique_ptr<compress::GradientCompressor> Compressor(const model::Model& model,
                                                         const compress::Settings& settings) {
  return std::make_unique<compress::GradientCompressor>(
      compress::PlanCompression(model.Tensors(), settings), settings, testing::kCompressionSeed);
}

testing::StrategyFactory Overlapped(const model::Model& model, compress::Settings settings,
                                    std::size_t bucket_floats = 1,
                                    optim::OptimizerOptions optimizer = testing::kMomentum) {
  return
      [&model, settings, bucket_floats, optimizer](RingAllReduce& ring, int, int, std::size_t n) {
        return std::make_unique<OverlappedSyncStrategy>(
            ring, ring, Buckets(model, bucket_floats), Compressor(model, settings),
            optim::MakeOptimizer(optimizer, 0, n), 1.0f);
      };
}

// The reference: the overlapped strategy's ops — each bucket's part of the plan, in the buckets'
// order, over a CompressingRing whose first op carries the votes — run after the whole pass on the
// training thread.
class BucketsAfterThePass final : public train::Strategy {
 public:
  BucketsAfterThePass(RingAllReduce& ring, const model::Model& model,
                      const compress::Settings& settings, std::size_t n)
      : ring_(ring),
        exchange_(ring),
        compressor_(compress::PlanCompression(model.Tensors(), settings), settings,
                    testing::kCompressionSeed),
        local_(optim::MakeOptimizer(testing::kMomentum, 0, n), 1.0f) {
    for (const GradientBucket& b : Buckets(model)) {
      parts_.push_back(compress::PartOf(compressor_.plan(), b.begin, b.end).value());
    }
  }
  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override {
    const float weight = train::ShareWeight(share, ring_.world());
    if (weight != 1.0f) math::Scale(weight, grad);
    exchange_.BeginExchange();
    for (const compress::PlanPart& part : parts_) {
      if (Status s = compressor_.ExchangePart(step, grad, part, exchange_); !s.ok()) return s;
    }
    return local_.Apply(step, params, grad, lr, share);
  }
  optim::Optimizer* LocalOptimizer() override { return local_.LocalOptimizer(); }

 private:
  RingAllReduce& ring_;
  CompressingRing exchange_;
  compress::GradientCompressor compressor_;
  train::LocalStrategy local_;
  std::vector<compress::PlanPart> parts_;
};

// TrainReplicasAsThreads over links of `transport` (TCP on 127.0.0.1, or shared memory).
std::vector<std::vector<float>> TrainOver(testing::Transport transport, const model::Model& model,
                                          const data::Dataset& set, int world,
                                          const testing::StrategyFactory& make) {
  const std::vector<RingLinks> links = testing::MakeRing(transport, world);
  std::vector<Result<std::vector<float>>> finals(static_cast<std::size_t>(world),
                                                 Status::Error("not run"));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      finals[r] = testing::TrainReplica(model, set, r, world, links[r], OneEpochPerReplica, make);
    });
  }
  for (std::thread& t : ranks) t.join();
  return testing::Finals(std::move(finals));
}

// TrainReplicasAsThreads' final parameters.
std::vector<std::vector<float>> Train(const model::Model& model, const data::Dataset& set,
                                      int world, const testing::StrategyFactory& make) {
  return testing::Finals(TrainReplicasAsThreads(model, set, world, OneEpochPerReplica, make));
}

void CheckSameBits(const std::vector<std::vector<float>>& a,
                   const std::vector<std::vector<float>>& b) {
  BOOST_REQUIRE(a.size() == b.size());
  for (std::size_t r = 0; r < a.size(); ++r) BOOST_TEST((a[r] == b[r]), "rank " << r << " differs");
}

BOOST_AUTO_TEST_SUITE(dist_overlapped_compressed)

// Two replicas over TCP, three over shared memory: the bits of the same buckets compressed after
// the pass, and of the whole exchange where its sums cannot round otherwise (two replicas, or
// bf16's and topk's gathered sums, value by value in rank order whatever the buckets).
BOOST_AUTO_TEST_CASE(overlapped_replicas_end_with_the_bits_of_their_buckets_after_the_pass) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);
  const model::Model model(WideSpec());
  BOOST_TEST_REQUIRE(Buckets(model).size() == 3u);
  const auto after_the_pass = [&](const compress::Settings& settings) {
    return [&model, settings](RingAllReduce& ring, int, int, std::size_t n) {
      return std::make_unique<BucketsAfterThePass>(ring, model, settings, n);
    };
  };
  for (const compress::Settings& settings : kMethods) {
    for (const auto& [world, transport] :
         {std::pair{2, testing::Transport::kTcp}, std::pair{3, testing::Transport::kShm}}) {
      BOOST_TEST_CONTEXT(compress::MethodName(settings.method) << ", world " << world) {
        const auto overlapped =
            TrainOver(transport, model, set, world, Overlapped(model, settings));
        for (int r = 1; r < world; ++r) {
          BOOST_TEST((overlapped[r] == overlapped[0]), "rank " << r);
        }
        CheckSameBits(overlapped, Train(model, set, world, after_the_pass(settings)));
        if (world == 2 || settings.method != compress::Method::kPowerSgd) {
          CheckSameBits(overlapped, Train(model, set, world, CompressedSync(model, settings)));
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_warm_up_as_long_as_the_run_is_the_uncompressed_overlapped_ring_to_the_bit) {
  math::SetBlasThreads(1);
  const data::Dataset set = Blobs(960);
  const model::Model model(WideSpec());
  const auto plain = Train(model, set, 3, [&](RingAllReduce& ring, int, int, std::size_t n) {
    return std::make_unique<OverlappedSyncStrategy>(
        ring, Buckets(model), optim::MakeOptimizer(testing::kMomentum, 0, n), 1.0f);
  });
  for (compress::Settings settings : kMethods) {
    settings.warmup_steps = 1'000'000;
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      CheckSameBits(plain, Train(model, set, 3, Overlapped(model, settings)));
    }
  }
}

// Ranks as threads over an in-process ring, each with the strategy `make` gives it, stepping
// through the gradients Input(rank, n, step) from parameters the caller keeps (so that they
// outlive a strategy, as a resumed job's do).
class Ranks {
 public:
  using Make = std::function<std::unique_ptr<train::Strategy>(RingAllReduce&, int rank)>;
  using AfterStep = std::function<void(int rank, train::Strategy&)>;

  Ranks(int world, const Make& make) : links_(MakeLocalRing(world)) {
    for (int r = 0; r < world; ++r) {
      const auto i = static_cast<std::size_t>(r);
      rings_.push_back(std::make_unique<RingAllReduce>(r, world, links_[i].left, links_[i].right));
      strategies_.push_back(make(*rings_.back(), r));
    }
  }

  // Steps [from, to) at rate 0.01 on every rank (params[rank]: its parameters); after_step, if
  // given, after each.
  void Steps(std::vector<std::vector<float>>& params, int from, int to,
             const AfterStep& after_step = {}) {
    Require(testing::RunRanks(World(), [&](int r) {
      const auto i = static_cast<std::size_t>(r);
      train::Strategy& strategy = *strategies_[i];
      const std::size_t n = params[i].size();
      for (int step = from; step < to; ++step) {
        std::vector<float> grad = testing::Input(r, n, static_cast<std::uint32_t>(step));
        grad.resize(n + strategy.GradientTail());
        const std::span<float> g(grad.data(), n);
        if (Status s = strategy.Apply(step, params[i], g, 0.01f, {1, 1}); !s.ok()) return s;
        if (after_step) after_step(r, strategy);
      }
      return Status::Ok();
    }));
  }

  // What CheckpointState gave each rank.
  std::vector<std::vector<std::vector<float>>> State() {
    std::vector<std::vector<std::vector<float>>> states(strategies_.size());
    Require(testing::RunRanks(World(), [&](int r) {
      const auto i = static_cast<std::size_t>(r);
      Result<std::vector<std::vector<float>>> state = strategies_[i]->CheckpointState();
      if (!state.ok()) return state.status();
      states[i] = std::move(state).value();
      return Status::Ok();
    }));
    return states;
  }

  train::Strategy& operator[](std::size_t rank) { return *strategies_[rank]; }

 private:
  int World() const { return static_cast<int>(strategies_.size()); }
  static void Require(const std::vector<Status>& statuses) {
    for (const Status& s : statuses) BOOST_REQUIRE_MESSAGE(s.ok(), s.message());
  }

  std::vector<RingLinks> links_;
  std::vector<std::unique_ptr<RingAllReduce>> rings_;
  std::vector<std::unique_ptr<train::Strategy>> strategies_;  // destroyed before their rings
};

// `factory`'s strategies for ranks of `world`, for a model of `n` parameters.
Ranks::Make Of(const testing::StrategyFactory& factory, int world, std::size_t n) {
  return [factory, world, n](RingAllReduce& ring, int r) { return factory(ring, r, world, n); };
}

std::vector<std::vector<float>> ZeroParams(int world, std::size_t n) {
  return std::vector<std::vector<float>>(static_cast<std::size_t>(world), std::vector<float>(n));
}

BOOST_AUTO_TEST_CASE(a_stop_and_a_checkpoint_proposed_by_one_replica_are_agreed_by_all_at_once) {
  math::SetBlasThreads(1);
  const model::Model model(WideSpec());
  constexpr int kWorld = 3;
  for (const compress::Settings& settings : kMethods) {
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      Ranks ranks(kWorld, Of(Overlapped(model, settings), kWorld, model.NumParams()));
      std::vector<std::vector<float>> params = ZeroParams(kWorld, model.NumParams());
      std::vector<std::vector<bool>> stops(kWorld), checkpoints(kWorld);
      const auto record = [&](int r, train::Strategy& strategy) {
        stops[r].push_back(strategy.AgreedStop() == train::StopReason::kRequested);
        checkpoints[r].push_back(strategy.CheckpointAgreed());
      };
      ranks.Steps(params, 0, 2, record);
      ranks[1].ProposeStop(train::StopReason::kRequested);
      ranks[1].ProposeCheckpoint();
      ranks.Steps(params, 2, 4, record);
      for (int r = 0; r < kWorld; ++r) {
        // Carried by step 2's first bucket, then forgotten.
        BOOST_TEST((stops[r] == std::vector<bool>{false, false, true, false}), "rank " << r);
        BOOST_TEST((checkpoints[r] == std::vector<bool>{false, false, true, false}), "rank " << r);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(the_checkpointed_state_is_laid_out_as_the_whole_exchanges) {
  math::SetBlasThreads(1);
  const model::Model model(WideSpec());
  const compress::Settings settings{.method = compress::Method::kPowerSgd, .rank = 2};
  const std::size_t n = model.NumParams();
  // Two replicas: the same bits as CompressedSyncStrategy, so the same state.
  Ranks overlapped(2, Of(Overlapped(model, settings), 2, n));
  Ranks whole(2, Of(CompressedSync(model, settings), 2, n));
  std::vector<std::vector<float>> overlapped_params = ZeroParams(2, n),
                                  whole_params = ZeroParams(2, n);
  overlapped.Steps(overlapped_params, 0, 3);
  whole.Steps(whole_params, 0, 3);
  const auto state = overlapped.State();
  // Rank 0: two residuals, then the one compressed layer's Q.
  BOOST_REQUIRE_EQUAL(state[0].size(), 3u);
  BOOST_TEST(state[1].empty());
  BOOST_TEST((state[0][0] != state[0][1]));
  BOOST_TEST((state[0] == whole.State()[0]));
}

BOOST_AUTO_TEST_CASE(replicas_resumed_with_other_buckets_continue_bit_for_bit) {
  math::SetBlasThreads(1);
  const model::Model model(WideSpec());
  const std::size_t n = model.NumParams();
  const optim::OptimizerOptions sgd = testing::OptimizerOfType(optim::OptimizerType::kSgd);
  for (const compress::Settings& settings : kMethods) {
    for (const int world : {2, 3}) {
      BOOST_TEST_CONTEXT(compress::MethodName(settings.method) << ", world " << world) {
        // Straight: 6 steps over three buckets.
        std::vector<std::vector<float>> straight = ZeroParams(world, n);
        Ranks(world, Of(Overlapped(model, settings, 1, sgd), world, n)).Steps(straight, 0, 6);
        // 3 steps over three buckets, then 3 more restored from their checkpointed state over
        // others: two at two replicas (bucket floats changed), the same three at three (where
        // other buckets would round PowerSGD's means differently).
        std::vector<std::vector<float>> params = ZeroParams(world, n);
        std::vector<std::vector<std::vector<float>>> state;
        {
          Ranks before(world, Of(Overlapped(model, settings, 1, sgd), world, n));
          before.Steps(params, 0, 3);
          state = before.State();
        }
        const std::size_t floats = world == 2 ? n / 2 : 1;
        BOOST_TEST_REQUIRE(Buckets(model, floats).size() == (world == 2 ? 2u : 3u));
        Ranks after(world, Of(Overlapped(model, settings, floats, sgd), world, n));
        const std::vector<std::span<const float>> views(state[0].begin(), state[0].end());
        for (std::size_t r = 0; r < static_cast<std::size_t>(world); ++r) {
          BOOST_REQUIRE(after[r].RestoreState(views).ok());
        }
        after.Steps(params, 3, 6);
        CheckSameBits(params, straight);
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace overlapped_compressed_test
}  // namespace dtrain::dist
