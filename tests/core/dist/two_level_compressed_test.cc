// Compressed sync exchanges over two levels (CompressingRing with a TwoLevelRing's mean), over real
// rings joined with JoinRings, ranks as threads of this process told apart into hosts
// (two_level_harness.h):
// - PowerSGD's means are the flat ring's to rounding, and a host sends across hosts what the one
//   replica of a host sends in a 2 x 1 job.
// - bf16 and top-k compress each host's float32 sum once: every replica gets the bits of a
//   reference that sums each host's gradients, compresses the sum chunk by chunk (one chunk per
//   replica of the host, a sparse tensor's piece by its own top k) with the host's residual, and
//   averages the hosts' messages in host order; error feedback conserves the gradient, also from
//   residuals that a flat job's checkpoint left everywhere; any replica's stop vote reaches all at
//   its step; a host sends what the one replica of a 2 x 1 job sends; bf16's buckets give the
//   whole exchange's bits, top-k's keep replicas alike; a resumed job continues bit for bit.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <memory>
#include <vector>

#include "core/compress/bf16.h"
#include "core/compress/top_k.h"
#include "core/dist/compressed_sync_strategy.h"
#include "core/dist/overlapped_sync_strategy.h"
#include "core/math/part_range.h"
#include "ring_harness.h"
#include "two_level_harness.h"

namespace dtrain::dist {
namespace two_level_compressed_test {

using compress::Method;
using compress::Settings;
using testing::Exchange;
using testing::Job;
using testing::PlanOf;

// A 64 x 64 weight matrix and its 64 biases.
constexpr std::size_t kSide = 64;
constexpr std::size_t kParams = kSide * kSide + kSide;
constexpr int kSteps = 4;
// The pass finishes the gradient from its end: the biases' bucket, then the weights'.
const std::vector<GradientBucket> kBucketPlan = {{kSide * kSide, kParams}, {0, kSide* kSide}};

const Settings kPowerSgd{.method = Method::kPowerSgd, .rank = 4};
const Settings kBf16{.method = Method::kBf16};
// Sparse weights (k = 205 of 4096) and biases (4 of 64).
const Settings kTopK{.method = Method::kTopK, .fraction = 0.05};

std::vector<compress::TensorPlan> PlanFor(const Settings& settings) {
  const std::vector<model::ParamTensor> tensors{
      {.offset = 0, .rows = kSide, .cols = kSide, .name = "weights"},
      {.offset = kSide * kSide, .rows = 1, .cols = kSide, .name = "biases"}};
  return compress::PlanCompression(tensors, settings);
}

// Replica r's gradient at a step.
std::vector<float> GradientOf(int r, int step) {
  return testing::Input(r, kParams, static_cast<std::uint32_t>(step));
}

// Steps [first, last) of a job (testing::StepAsTrainer's), from `params` (and, where given, the
// compressor state of a checkpoint).
struct Steps {
  int first = 0, last = kSteps;
  std::vector<float> params = std::vector<float>(kParams, 0.0f);
  std::vector<std::vector<float>> restore;  // empty: a fresh start
};

// What each replica of a run ends with.
struct Run {
  std::vector<Status> status;
  std::vector<std::vector<float>> params;
  std::vector<std::vector<int>> agreed;  // per step: the reason's number, -1 for none
  std::vector<std::uint64_t> sent;
  std::vector<std::vector<float>> state;  // rank 0's checkpoint after the last step
};

// `hosts` x (world / hosts) replicas compress by `settings`, their exchange over two levels
// (hosts >= 2) or the flat ring of all (hosts == 1), the whole gradient after the pass or in
// kBucketPlan during it.
Run Train(int hosts, int world, const Settings& settings, Exchange how, const Steps& steps = {}) {
  const auto n = static_cast<std::size_t>(world);
  Run run{.status = {},
          .params = std::vector<std::vector<float>>(n, steps.params),
          .agreed = std::vector<std::vector<int>>(n),
          .sent = std::vector<std::uint64_t>(n),
          .state = {}};
  std::vector<RingLinks> flat = testing::MakeRing(testing::Transport::kLocal, world);
  std::optional<Job> job;
  if (hosts > 1) job.emplace(hosts, world, LinkTransport::kAuto);
  run.status = testing::RunRanks(world, [&](int r) -> Status {
    const auto i = static_cast<std::size_t>(r);
    RingAllReduce ring(r, world, flat[i].left, flat[i].right);
    std::unique_ptr<TwoLevelRing> two_level;
    if (job) {
      Result<std::unique_ptr<TwoLevelRing>> made = MakeTwoLevelRing(*job->groups, job->JoinOf(r));
      if (!made.ok()) return made.status();
      two_level = std::move(made).value();
    }
    MeanCollective& mean = two_level ? two_level->mean() : static_cast<MeanCollective&>(ring);
    std::unique_ptr<train::Strategy> sync;
    if (how == Exchange::kBuckets) {
      sync = std::make_unique<OverlappedSyncStrategy>(
          ring, mean, kBucketPlan,
          std::make_unique<compress::GradientCompressor>(PlanFor(settings), settings, /*seed=*/5),
          optim::MakeOptimizer({}, 0, kParams), 0.0f);
    } else {
      sync = std::make_unique<CompressedSyncStrategy>(ring, mean, PlanFor(settings), settings,
                                                      /*seed=*/5,
                                                      optim::MakeOptimizer({}, 0, kParams), 0.0f);
    }
    if (!steps.restore.empty()) {
      const std::vector<std::span<const float>> state(steps.restore.begin(), steps.restore.end());
      if (Status s = sync->RestoreState(state); !s.ok()) return s;
    }
    std::vector<float> grad(kParams);
    for (int step = steps.first; step < steps.last; ++step) {
      const std::span<const GradientBucket> buckets =
          how == Exchange::kBuckets ? std::span<const GradientBucket>(kBucketPlan)
                                    : std::span<const GradientBucket>();
      if (Status s = testing::StepAsTrainer(*sync, {.rank = r, .world = world, .step = step},
                                            GradientOf(r, step), grad, buckets, run.params[i],
                                            run.agreed[i]);
          !s.ok()) {
        return s;
      }
    }
    run.sent[i] = sync->Stats().bytes_sent;
    Result<std::vector<std::vector<float>>> state = sync->CheckpointState();
    if (!state.ok()) return state.status();
    if (r == 0) run.state = std::move(state).value();
    return Status::Ok();
  });
  for (std::size_t i = 0; i < n; ++i) {
    BOOST_TEST_REQUIRE(run.status[i].ok(), run.status[i].message());
  }
  return run;
}

void CheckAlike(const Run& run) {
  for (std::size_t r = 0; r < run.params.size(); ++r) {
    BOOST_TEST_CONTEXT("rank " << r) {
      BOOST_TEST(testing::SameBits(run.params[r], run.params[0]));
    }
  }
}

// The bytes that the replicas of each host of a 2 x 2 run sent across hosts.
std::vector<std::uint64_t> SentPerHost(const Run& run) {
  const std::optional<HostGroups> groups = PlanOf(2, 4);
  std::vector<std::uint64_t> sent(2, 0);
  for (int r = 0; r < 4; ++r) {
    sent[static_cast<std::size_t>(groups->Host(r))] += run.sent[static_cast<std::size_t>(r)];
  }
  return sent;
}

// Each replica's compressor over two levels (2 hosts x 2), its residual set to `residuals[r]`
// first where given: every replica's mean of each step, and its residual after the last.
struct Exchanged {
  std::vector<std::vector<std::vector<float>>> means;  // [rank][step]
  std::vector<std::vector<float>> residuals;
};

Exchanged ExchangeOverTwoLevels(const Settings& settings,
                                const std::vector<std::vector<float>>& residuals = {}) {
  constexpr int kWorld = 4;
  Exchanged out{.means = std::vector<std::vector<std::vector<float>>>(kWorld),
                .residuals = std::vector<std::vector<float>>(kWorld)};
  std::vector<RingLinks> flat = testing::MakeRing(testing::Transport::kLocal, kWorld);
  Job job(2, kWorld, LinkTransport::kAuto);
  const std::vector<Status> status = testing::RunRanks(kWorld, [&](int r) -> Status {
    const auto i = static_cast<std::size_t>(r);
    RingAllReduce ring(r, kWorld, flat[i].left, flat[i].right);
    Result<std::unique_ptr<TwoLevelRing>> two_level = MakeTwoLevelRing(*job.groups, job.JoinOf(r));
    if (!two_level.ok()) return two_level.status();
    CompressingRing exchange(ring, two_level.value()->mean());
    if (!exchange.SumsWithinHost()) return Status::Error("the exchange does not sum within hosts");
    compress::GradientCompressor compressor(PlanFor(settings), settings, /*seed=*/5);
    if (!residuals.empty()) std::ranges::copy(residuals[i], compressor.StateVectors()[0].begin());
    for (int step = 0; step < kSteps; ++step) {
      std::vector<float> grad = GradientOf(r, step);
      exchange.BeginExchange();
      if (Status s = compressor.Exchange(step, grad, exchange); !s.ok()) return s;
      out.means[i].push_back(std::move(grad));
    }
    const std::span<const float> residual = compressor.StateVectors()[0];
    out.residuals[i].assign(residual.begin(), residual.end());
    return Status::Ok();
  });
  for (std::size_t i = 0; i < status.size(); ++i) {
    BOOST_TEST_REQUIRE(status[i].ok(), status[i].message());
  }
  return out;
}

// The means of a 2 x 2 job by the stated method (see the top), from zero residuals: each host's
// sum a + b of its two replicas' gradients; chunk i of it (PartOf(kParams, 2, i)) cut at the
// tensors' bounds into pieces, each piece's values M = sum + the host's residual sent as the
// tensor's encoding says (bf16: M rounded; sparse: its own top k of M; raw: M), the host's
// residual keeping the rest; the mean of a value: what the hosts sent of it added in host order
// from zero, times 1/4 (a sparse value only where some host sent it).
std::vector<std::vector<float>> ReferenceMeans(const Settings& settings) {
  const std::vector<compress::TensorPlan> plan = PlanFor(settings);
  const std::optional<HostGroups> groups = PlanOf(2, 4);
  std::vector<std::vector<float>> residual(2, std::vector<float>(kParams, 0.0f));
  std::vector<std::vector<float>> means;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<std::vector<float>> sum(2, std::vector<float>(kParams, 0.0f));
    for (int host = 0; host < 2; ++host) {
      std::vector<int> ranks(2);
      for (int r = 0; r < 4; ++r) {
        if (groups->Host(r) == host) ranks[static_cast<std::size_t>(groups->LocalIndex(r))] = r;
      }
      const std::vector<float> a = GradientOf(ranks[0], step), b = GradientOf(ranks[1], step);
      for (std::size_t f = 0; f < kParams; ++f) sum[host][f] = a[f] + b[f];
    }
    std::vector<float> total(kParams, 0.0f);
    std::vector<bool> sent(kParams, false);
    for (int chunk = 0; chunk < 2; ++chunk) {
      const math::PartRange c = math::PartOf(kParams, 2, chunk);
      for (const compress::TensorPlan& t : plan) {
        const std::size_t begin = std::max(c.begin, t.tensor.offset);
        const std::size_t end = std::min(c.end, t.tensor.offset + t.tensor.count());
        if (begin >= end) continue;
        for (std::size_t host = 0; host < 2; ++host) {
          std::vector<float> m(end - begin);
          for (std::size_t f = begin; f < end; ++f) m[f - begin] = sum[host][f] + residual[host][f];
          std::vector<bool> chosen(m.size(), true);
          if (t.encoding == compress::Encoding::kSparse) {
            std::vector<std::uint32_t> top(compress::SparseValues(m.size(), settings.fraction));
            compress::SelectTopK(m, top);
            chosen.assign(m.size(), false);
            for (std::uint32_t j : top) chosen[j] = true;
          }
          for (std::size_t j = 0; j < m.size(); ++j) {
            const float value = t.encoding == compress::Encoding::kBf16
                                    ? compress::FromBf16(compress::ToBf16(m[j]))
                                    : (chosen[j] ? m[j] : 0.0f);
            residual[host][begin + j] = m[j] - value;
            if (chosen[j]) {
              total[begin + j] += value;
              sent[begin + j] = true;
            }
          }
        }
      }
    }
    for (std::size_t f = 0; f < kParams; ++f) {
      if (sent[f]) total[f] *= 0.25f;
    }
    means.push_back(std::move(total));
  }
  return means;
}

BOOST_AUTO_TEST_SUITE(dist_two_level_compressed)

// The same math in another order of sums: the flat ring's parameters to rounding; and the host's
// replicas together send across hosts what the one replica of a host sends in a 2 x 1 job.
BOOST_AUTO_TEST_CASE(powersgd_over_two_levels_is_the_flat_rings_and_sends_one_replicas_bytes) {
  const Run two_level = Train(2, 4, kPowerSgd, Exchange::kWhole);
  const Run flat = Train(1, 4, kPowerSgd, Exchange::kWhole);
  CheckAlike(two_level);
  double largest = 0.0, worst = 0.0;
  for (std::size_t f = 0; f < kParams; ++f) {
    largest = std::max(largest, static_cast<double>(std::fabs(flat.params[0][f])));
    worst =
        std::max(worst, static_cast<double>(std::fabs(two_level.params[0][f] - flat.params[0][f])));
  }
  BOOST_TEST(largest > 0.0);
  BOOST_TEST(worst <= 1e-4 * largest);

  const Run one_per_host = Train(1, 2, kPowerSgd, Exchange::kWhole);  // 2 x 1: one ring of two
  for (std::uint64_t sent : SentPerHost(two_level)) BOOST_TEST(sent == one_per_host.sent[0]);
}

BOOST_AUTO_TEST_CASE(bf16_and_topk_give_the_mean_of_each_hosts_compressed_sum) {
  for (const Settings& settings : {kBf16, kTopK}) {
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      const Exchanged got = ExchangeOverTwoLevels(settings);
      const std::vector<std::vector<float>> want = ReferenceMeans(settings);
      for (std::size_t r = 0; r < got.means.size(); ++r) {
        for (int step = 0; step < kSteps; ++step) {
          BOOST_TEST_CONTEXT("rank " << r << ", step " << step) {
            const auto s = static_cast<std::size_t>(step);
            BOOST_TEST(testing::SameBits(got.means[r][s], want[s]));
          }
        }
      }
    }
  }
}

// Every replica starts with a residual of its own everywhere (as a flat job's checkpoint leaves
// them): what the steps' means carried (times the world) plus what the residuals hold at the end
// is every gradient plus every first residual, to rounding.
BOOST_AUTO_TEST_CASE(error_feedback_over_two_levels_conserves_the_gradient) {
  std::vector<std::vector<float>> first;
  for (int r = 0; r < 4; ++r) first.push_back(testing::Input(r + 10, kParams, 99));
  for (const Settings& settings : {kBf16, kTopK}) {
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      const Exchanged got = ExchangeOverTwoLevels(settings, first);
      std::size_t outside = 0;
      for (std::size_t f = 0; f < kParams; ++f) {
        double want = 0.0, have = 0.0, scale = 0.0;
        for (int r = 0; r < 4; ++r) {
          const auto i = static_cast<std::size_t>(r);
          want += first[i][f];
          scale += std::fabs(first[i][f]) + std::fabs(got.residuals[i][f]);
          have += got.residuals[i][f];
          for (int step = 0; step < kSteps; ++step) {
            want += GradientOf(r, step)[f];
            scale += std::fabs(GradientOf(r, step)[f]);
          }
        }
        for (int step = 0; step < kSteps; ++step) {
          have += 4.0 * got.means[0][static_cast<std::size_t>(step)][f];
        }
        if (std::fabs(have - want) > 1e-5 * scale) ++outside;
      }
      BOOST_TEST(outside == 0u);
    }
  }
}

BOOST_AUTO_TEST_CASE(bf16_and_topk_over_two_levels_agree_on_votes_and_send_one_replicas_bytes) {
  const std::vector<int> votes{-1, static_cast<int>(train::StopReason::kTargetReached), -1,
                               static_cast<int>(train::StopReason::kRequested)};
  for (const Settings& settings : {kBf16, kTopK}) {
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      const Run two_level = Train(2, 4, settings, Exchange::kWhole);
      CheckAlike(two_level);
      for (const std::vector<int>& agreed : two_level.agreed) {
        BOOST_TEST(agreed == testing::AgreedVotes(), boost::test_tools::per_element());
      }
      // 2 x 1: each replica sends its block (and its votes) once a step. The chunks' messages
      // add up to the same floats here; each replica of a host adds its votes.
      const Run one_per_host = Train(1, 2, settings, Exchange::kWhole);
      const std::uint64_t more = kSteps * VotingAllReduce::kVoteFloats * sizeof(float);
      for (std::uint64_t sent : SentPerHost(two_level)) {
        BOOST_TEST(sent == one_per_host.sent[0] + more);
      }
    }
  }
}

// bf16 rounds each value alone, whatever the chunks: the buckets' bits are the whole exchange's.
// Top-k's pieces differ with the buckets; its replicas stay alike.
BOOST_AUTO_TEST_CASE(buckets_over_two_levels_keep_replicas_alike) {
  const Run whole = Train(2, 4, kBf16, Exchange::kWhole);
  const Run buckets = Train(2, 4, kBf16, Exchange::kBuckets);
  CheckAlike(buckets);
  BOOST_TEST(testing::SameBits(buckets.params[0], whole.params[0]));
  CheckAlike(Train(2, 4, kTopK, Exchange::kBuckets));
}

BOOST_AUTO_TEST_CASE(a_resumed_job_over_two_levels_continues_bit_for_bit) {
  for (const Settings& settings : {kBf16, kTopK}) {
    BOOST_TEST_CONTEXT(compress::MethodName(settings.method)) {
      const Run straight = Train(2, 4, settings, Exchange::kWhole);
      const Run before = Train(
          2, 4, settings, Exchange::kWhole,
          {.first = 0, .last = 2, .params = std::vector<float>(kParams, 0.0f), .restore = {}});
      const Run after =
          Train(2, 4, settings, Exchange::kWhole,
                {.first = 2, .last = kSteps, .params = before.params[0], .restore = before.state});
      CheckAlike(after);
      BOOST_TEST(testing::SameBits(after.params[0], straight.params[0]));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace two_level_compressed_test
}  // namespace dtrain::dist
