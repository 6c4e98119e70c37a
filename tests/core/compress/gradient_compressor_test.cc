// GradientCompressor: error feedback loses nothing, replicas end with the same bits, the mean is
// what each method's math says, warm-up steps are plain means, its state resumes exactly, and
// PowerSGD on a team of threads gives one thread's bits.
#include "core/compress/gradient_compressor.h"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "core/compress/bf16.h"
#include "core/compress/low_rank.h"
#include "core/data/random.h"
#include "core/math/thread_team.h"
#include "replica_exchange.h"

namespace dtrain::compress {
namespace gradient_compressor_test {

using Floats = std::vector<float>;

constexpr std::size_t kFloats = 32 * 24 + 24 + 6;
constexpr std::uint64_t kSeed = 5;

// A 32 x 24 weight matrix, its 24 biases, and 6 more values: under powersgd rank 2 the matrix is
// low rank and the rest raw; under topk (5%) the matrix and the biases are sparse, the 6 raw.
std::vector<model::ParamTensor> Tensors() {
  return {{.offset = 0, .rows = 32, .cols = 24, .name = "weights"},
          {.offset = 768, .rows = 1, .cols = 24, .name = "biases"},
          {.offset = 792, .rows = 1, .cols = 6, .name = "scales"}};
}

Settings SettingsFor(Method method, std::int64_t warmup_steps = 0) {
  return {.method = method, .rank = 2, .fraction = 0.05, .warmup_steps = warmup_steps};
}

GradientCompressor MakeCompressor(const Settings& settings, std::uint64_t seed = kSeed) {
  return GradientCompressor(PlanCompression(Tensors(), settings), settings, seed);
}

Floats Gradient(int rank, std::int64_t step) {
  data::SplitMix64 rng(
      data::MixSeed(static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(step)));
  Floats g(kFloats);
  for (float& v : g) v = static_cast<float>(rng.Uniform() * 2.0 - 1.0);
  return g;
}

bool SameBits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

// One replica alone: Mean and Gather leave its data as it is.
void StepAlone(GradientCompressor& c, std::int64_t step, std::span<float> grad) {
  ReplicaExchange::Shared shared(1);
  ReplicaExchange exchange(shared, 0);
  BOOST_REQUIRE(c.Exchange(step, grad, exchange).ok());
}

// Tensors() as an overlapped exchange's buckets cut them: the last two tensors, then the first.
std::vector<PlanPart> Parts(std::span<const TensorPlan> plan) {
  std::vector<PlanPart> parts;
  for (const auto& [begin, end] : {std::pair<std::size_t, std::size_t>{768, kFloats}, {0, 768}}) {
    Result<PlanPart> part = PartOf(plan, begin, end);
    BOOST_TEST_REQUIRE(part.ok(), part.status().message());
    parts.push_back(part.value());
  }
  return parts;
}

// The step's exchange of `parts` one after another (the whole plan where empty).
Status ExchangeParts(GradientCompressor& c, std::int64_t step, std::span<float> grad,
                     std::span<const PlanPart> parts, GradientExchange& exchange) {
  if (parts.empty()) return c.Exchange(step, grad, exchange);
  for (const PlanPart& part : parts) {
    if (Status s = c.ExchangePart(step, grad, part, exchange); !s.ok()) return s;
  }
  return Status::Ok();
}

// `grads.size()` replicas with the same settings and seed, stepping together: each replica's
// gradient in, the step's mean out.
class Replicas {
 public:
  Replicas(int world, const Settings& settings) {
    for (int r = 0; r < world; ++r) compressors_.push_back(MakeCompressor(settings));
  }
  // Each replica's exchange of `parts` in turn (the whole plan at once where empty).
  void Step(std::int64_t step, std::vector<Floats>& grads, std::span<const PlanPart> parts = {}) {
    const std::vector<Status> statuses =
        RunReplicas(static_cast<int>(compressors_.size()), [&](int rank, GradientExchange& e) {
          const auto r = static_cast<std::size_t>(rank);
          return ExchangeParts(compressors_[r], step, grads[r], parts, e);
        });
    for (const Status& s : statuses) BOOST_REQUIRE(s.ok());
  }
  GradientCompressor& operator[](std::size_t rank) { return compressors_[rank]; }

 private:
  std::vector<GradientCompressor> compressors_;
};

std::vector<Floats> Gradients(int world, std::int64_t step) {
  std::vector<Floats> grads;
  for (int r = 0; r < world; ++r) grads.push_back(Gradient(r, step));
  return grads;
}

// Positions of tensor t's k values of largest magnitude (distinct magnitudes), by a full sort.
std::vector<std::size_t> LargestK(const Floats& values, const TensorPlan& t) {
  std::vector<std::size_t> order(t.tensor.count());
  std::iota(order.begin(), order.end(), t.tensor.offset);
  std::ranges::sort(order, [&](std::size_t a, std::size_t b) {
    return std::fabs(values[a]) > std::fabs(values[b]);
  });
  order.resize(t.k);
  return order;
}

constexpr int kWorld = 3;

// The mean over replicas of what sent(g) says a replica with gradient g contributes, in double.
std::vector<double> MeanOf(const std::vector<Floats>& grads,
                           const std::function<Floats(const Floats&)>& sent) {
  std::vector<double> mean(kFloats, 0.0);
  for (const Floats& g : grads) {
    const Floats contribution = sent(g);
    for (std::size_t i = 0; i < kFloats; ++i) mean[i] += contribution[i] / double{kWorld};
  }
  return mean;
}

// out[i] is expected[i] to a float sum's rounding, for i in [from, to).
void CheckNear(const Floats& out, const std::vector<double>& expected, std::size_t from,
               std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    BOOST_TEST(std::fabs(out[i] - expected[i]) < 1e-6, "value " << i);
  }
}

// Three replicas' first step under `method`: each ends with the mean of what sent(g) says a
// replica with gradient g contributes.
void CheckFirstStepMean(Method method, const std::function<Floats(const Floats&)>& sent) {
  Replicas replicas(kWorld, SettingsFor(method));
  std::vector<Floats> grads = Gradients(kWorld, 0);
  const std::vector<double> expected = MeanOf(grads, sent);
  replicas.Step(0, grads);
  CheckNear(grads[0], expected, 0, kFloats);
}

const Method kLossy[] = {Method::kBf16, Method::kPowerSgd, Method::kTopK};
const Method kAll[] = {Method::kNone, Method::kBf16, Method::kPowerSgd, Method::kTopK};

// One replica alone, exchanging `parts` in turn (the whole plan where empty): over 8 steps what it
// sent plus its residual is what it was given, value by value.
void CheckErrorFeedbackConserves(std::span<const PlanPart> parts) {
  for (const Method method : kLossy) {
    GradientCompressor c = MakeCompressor(SettingsFor(method));
    std::vector<double> sent(kFloats, 0.0), given(kFloats, 0.0);
    for (std::int64_t step = 0; step < 8; ++step) {
      Floats grad = Gradient(0, step);
      for (std::size_t i = 0; i < kFloats; ++i) given[i] += grad[i];
      ReplicaExchange::Shared shared(1);
      ReplicaExchange alone(shared, 0);
      BOOST_REQUIRE(ExchangeParts(c, step, grad, parts, alone).ok());
      for (std::size_t i = 0; i < kFloats; ++i) sent[i] += grad[i];
    }
    const std::span<const float> residual = c.StateVectors()[0];
    double magnitude = 0.0, held_back = 0.0;
    for (std::size_t i = 0; i < kFloats; ++i) {
      magnitude = std::max(magnitude, std::fabs(given[i]));
      held_back = std::max(held_back, std::fabs(static_cast<double>(residual[i])));
    }
    for (std::size_t i = 0; i < kFloats; ++i) {
      BOOST_TEST(std::fabs(sent[i] + residual[i] - given[i]) <= 1e-5 * magnitude,
                 MethodName(method) << " value " << i);
    }
    BOOST_TEST(held_back > 1e-3, MethodName(method) << ": the compression lost something");
  }
}

BOOST_AUTO_TEST_SUITE(gradient_compressor)

BOOST_AUTO_TEST_CASE(error_feedback_conserves_the_gradient) { CheckErrorFeedbackConserves({}); }

BOOST_AUTO_TEST_CASE(error_feedback_conserves_the_gradient_of_each_part) {
  CheckErrorFeedbackConserves(Parts(PlanCompression(Tensors(), SettingsFor(Method::kTopK))));
}

// Each part's tensors, residual and Qs are its own, and ReplicaExchange sums value by value: the
// parts, last first, give the whole exchange's bits whatever the method, warm-up included.
BOOST_AUTO_TEST_CASE(a_plan_exchanged_part_by_part_gives_the_whole_exchanges_bits) {
  for (const Method method : kAll) {
    for (const std::int64_t warmup : {0, 2}) {
      BOOST_TEST_CONTEXT(MethodName(method) << " warmup " << warmup) {
        Replicas whole(kWorld, SettingsFor(method, warmup));
        Replicas parted(kWorld, SettingsFor(method, warmup));
        const std::vector<PlanPart> parts = Parts(whole[0].plan());
        for (std::int64_t step = 0; step < 5; ++step) {
          std::vector<Floats> a = Gradients(kWorld, step), b = a;
          whole.Step(step, a);
          parted.Step(step, b, parts);
          for (std::size_t r = 0; r < kWorld; ++r) {
            BOOST_TEST(SameBits(a[r], b[r]), "step " << step << " rank " << r);
          }
        }
        const std::vector<std::span<float>> from = whole[1].StateVectors();
        const std::vector<std::span<float>> to = parted[1].StateVectors();
        for (std::size_t v = 0; v < from.size(); ++v) BOOST_TEST(SameBits(from[v], to[v]));
        BOOST_TEST(whole[1].stats().raw_bytes == parted[1].stats().raw_bytes);
        BOOST_TEST(whole[1].stats().sent_bytes == parted[1].stats().sent_bytes);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_part_is_whole_tensors) {
  const std::vector<TensorPlan> plan = PlanCompression(Tensors(), SettingsFor(Method::kTopK));
  BOOST_TEST((PartOf(plan, 0, kFloats).value() == PlanPart{0, 3}));
  BOOST_TEST((PartOf(plan, 768, 792).value() == PlanPart{1, 1}));
  BOOST_TEST(!PartOf(plan, 0, 100).ok());
  BOOST_TEST(!PartOf(plan, 700, 792).ok());
  BOOST_TEST(!PartOf(plan, 768, kFloats + 1).ok());
}

BOOST_AUTO_TEST_CASE(replicas_end_bitwise_identical) {
  for (const Method method : kAll) {
    for (const std::int64_t warmup : {0, 2}) {
      Replicas replicas(kWorld, SettingsFor(method, warmup));
      for (std::int64_t step = 0; step < 5; ++step) {
        std::vector<Floats> grads = Gradients(kWorld, step);
        replicas.Step(step, grads);
        for (std::size_t r = 1; r < kWorld; ++r) {
          BOOST_TEST(SameBits(grads[r], grads[0]), MethodName(method)
                                                       << " warmup " << warmup << " step " << step);
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bf16_mean_is_the_mean_of_the_rounded_gradients) {
  CheckFirstStepMean(Method::kBf16, [](const Floats& g) {
    Floats sent(kFloats);
    std::ranges::transform(g, sent.begin(), RoundToBf16);
    return sent;
  });
}

BOOST_AUTO_TEST_CASE(topk_mean_is_the_mean_of_each_replicas_largest_values) {
  CheckFirstStepMean(Method::kTopK, [](const Floats& g) {
    Floats sent = g;
    for (const TensorPlan& t : PlanCompression(Tensors(), SettingsFor(Method::kTopK))) {
      if (t.encoding != Encoding::kSparse) continue;
      std::fill_n(sent.begin() + static_cast<std::ptrdiff_t>(t.tensor.offset), t.tensor.count(),
                  0.0f);
      for (const std::size_t i : LargestK(g, t)) sent[i] = g[i];
    }
    return sent;
  });
}

BOOST_AUTO_TEST_CASE(powersgd_mean_of_gradients_in_one_rank_2_column_space_is_exact) {
  // Replica r's weight gradient A B_r^T (A shared, 32 x 2): the mean lies in A's column space,
  // which one power step finds; the rest of the gradient travels raw.
  Replicas replicas(kWorld, SettingsFor(Method::kPowerSgd));
  std::vector<Floats> grads = Gradients(kWorld, 0);
  const Floats a = std::vector<float>(grads[0].begin(), grads[0].begin() + 64);
  for (int r = 0; r < kWorld; ++r) {
    const Floats b = Gradient(r + 10, 0);
    std::fill_n(grads[r].begin(), 768, 0.0f);
    AddProduct(a, std::span(b).first(48), 32, 24, 2, 1.0f, std::span(grads[r]).first(768));
  }
  const std::vector<double> expected = MeanOf(grads, [](const Floats& g) { return g; });
  replicas.Step(0, grads);
  double error = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < 768; ++i) {
    error += std::pow(grads[0][i] - expected[i], 2);
    norm += std::pow(expected[i], 2);
  }
  BOOST_TEST(std::sqrt(error / norm) < 1e-4);
  CheckNear(grads[0], expected, 768, kFloats);
}

BOOST_AUTO_TEST_CASE(powersgd_keeps_the_q_its_output_was_built_from) {
  // The output is P Q^T with P orthonormal, so its W^T W equals Q Q^T for the Q the next step
  // starts from (the initial Q, random, would not match).
  GradientCompressor c = MakeCompressor(SettingsFor(Method::kPowerSgd));
  Floats grad = Gradient(0, 0);
  StepAlone(c, 0, grad);
  const std::span<const float> q = c.StateVectors()[1];  // 24 x 2
  constexpr std::size_t kRows = 32, kCols = 24, kRank = 2;
  double largest = 0.0, difference = 0.0;
  for (std::size_t a = 0; a < kCols; ++a) {
    for (std::size_t b = 0; b < kCols; ++b) {
      double gram = 0.0, q_q = 0.0;
      for (std::size_t row = 0; row < kRows; ++row) {
        gram += static_cast<double>(grad[row * kCols + a]) * grad[row * kCols + b];
      }
      for (std::size_t k = 0; k < kRank; ++k)
        q_q += static_cast<double>(q[a * kRank + k]) * q[b * kRank + k];
      largest = std::max(largest, std::fabs(gram));
      difference = std::max(difference, std::fabs(gram - q_q));
    }
  }
  BOOST_TEST(difference <= 1e-4 * largest);
}

BOOST_AUTO_TEST_CASE(warmup_steps_are_plain_means_and_leave_the_residual_zero) {
  for (const Method method : kLossy) {
    Replicas replicas(kWorld, SettingsFor(method, /*warmup_steps=*/2));
    for (std::int64_t step = 0; step < 2; ++step) {
      std::vector<Floats> grads = Gradients(kWorld, step);
      Floats mean(kFloats);
      for (std::size_t i = 0; i < kFloats; ++i) {
        mean[i] = (grads[0][i] + grads[1][i] + grads[2][i]) / float{kWorld};  // ReplicaExchange's
      }
      replicas.Step(step, grads);
      BOOST_TEST(SameBits(grads[0], mean), MethodName(method) << " step " << step);
    }
    const std::span<const float> residual = replicas[0].StateVectors()[0];
    BOOST_TEST(std::ranges::all_of(residual, [](float v) { return v == 0.0f; }));
    BOOST_TEST(replicas[0].stats().raw_bytes == 0u);

    std::vector<Floats> grads = Gradients(kWorld, 2);
    replicas.Step(2, grads);
    const CompressionStats& stats = replicas[0].stats();
    BOOST_TEST(stats.raw_bytes == PlanFloats(replicas[0].plan()) * sizeof(float));
    BOOST_TEST(stats.sent_bytes == PlanSentFloats(replicas[0].plan()) * sizeof(float));
    BOOST_TEST(stats.sent_bytes < stats.raw_bytes);
  }
}

BOOST_AUTO_TEST_CASE(state_vectors_have_the_plans_sizes) {
  GradientCompressor powersgd = MakeCompressor(SettingsFor(Method::kPowerSgd));
  const std::vector<std::span<float>> low_rank = powersgd.StateVectors();
  BOOST_TEST(low_rank.size() == 2u);
  BOOST_TEST(low_rank[0].size() == kFloats);
  BOOST_TEST(low_rank[1].size() == 24u * 2u);  // Q of the weights: cols x rank
  GradientCompressor topk = MakeCompressor(SettingsFor(Method::kTopK));
  BOOST_TEST(topk.StateVectors().size() == 1u);
  BOOST_TEST(topk.StateVectors()[0].size() == kFloats);
}

BOOST_AUTO_TEST_CASE(restored_state_continues_bitwise_identically) {
  for (const Method method : kLossy) {
    GradientCompressor a = MakeCompressor(SettingsFor(method));
    for (std::int64_t step = 0; step < 5; ++step) {
      Floats grad = Gradient(0, step);
      StepAlone(a, step, grad);
    }
    GradientCompressor b = MakeCompressor(SettingsFor(method), /*seed=*/kSeed + 1);
    const std::vector<std::span<float>> from = a.StateVectors(), to = b.StateVectors();
    for (std::size_t v = 0; v < from.size(); ++v) std::ranges::copy(from[v], to[v].begin());
    for (std::int64_t step = 5; step < 8; ++step) {
      Floats grad_a = Gradient(0, step), grad_b = grad_a;
      StepAlone(a, step, grad_a);
      StepAlone(b, step, grad_b);
      BOOST_TEST(SameBits(grad_a, grad_b), MethodName(method) << " step " << step);
    }
  }
}

BOOST_AUTO_TEST_CASE(powersgd_on_a_team_gives_the_bits_of_one_thread) {
  // 3 threads: the 32 rows and 24 columns of the weights split unevenly.
  math::ThreadTeam team(3);
  GradientCompressor alone = MakeCompressor(SettingsFor(Method::kPowerSgd));
  GradientCompressor shared = MakeCompressor(SettingsFor(Method::kPowerSgd));
  shared.ShareThreads(team);
  for (std::int64_t step = 0; step < 4; ++step) {
    Floats grad_alone = Gradient(0, step), grad_shared = grad_alone;
    StepAlone(alone, step, grad_alone);
    StepAlone(shared, step, grad_shared);
    BOOST_TEST(SameBits(grad_alone, grad_shared), "step " << step);
  }
  const std::vector<std::span<float>> a = alone.StateVectors(), b = shared.StateVectors();
  for (std::size_t v = 0; v < a.size(); ++v) BOOST_TEST(SameBits(a[v], b[v]), "state " << v);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gradient_compressor_test
}  // namespace dtrain::compress
