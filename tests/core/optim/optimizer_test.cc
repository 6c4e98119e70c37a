// Optimizers against scalar reference loops, and the invariants parameter-server shards and
// checkpoints rely on: a range is all an optimizer touches, shards equal one optimizer bit for
// bit, and restored state continues bit for bit.
#include "core/optim/optimizer.h"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/math/buffer.h"
#include "core/math/thread_team.h"
#include "core/optim/test_util.h"

namespace dtrain::optim {
namespace optimizer_test {

using math::FloatBuffer;

// Every update rule once, with non-default hyperparameters so that a rule reading the wrong
// option (or its default) shows.
std::vector<OptimizerOptions> AllConfigs() {
  return {
      {.type = OptimizerType::kSgd},
      {.type = OptimizerType::kMomentum, .momentum = 0.8f},
      {.type = OptimizerType::kMomentum, .momentum = 0.7f, .nesterov = true},
      {.type = OptimizerType::kAdagrad, .eps = 1e-6f, .initial_accumulator = 0.2f},
      {.type = OptimizerType::kAdam, .beta1 = 0.8f, .beta2 = 0.99f, .eps = 1e-6f},
      {.type = OptimizerType::kFtrl, .alpha = 0.3f, .beta = 0.7f, .l1 = 0.05f, .l2 = 0.1f},
  };
}

std::string Describe(const OptimizerOptions& o) {
  return std::string(OptimizerTypeName(o.type)) + (o.nesterov ? " (nesterov)" : "");
}

FloatBuffer Random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  FloatBuffer v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

float StepLr(int step) { return 0.01f * static_cast<float>(step + 1); }

// The update rules written out as the textbook scalar loops, in double.
class Reference {
 public:
  Reference(const OptimizerOptions& o, std::size_t n) : o_(o), a_(n, 0.0), b_(n, 0.0) {
    if (o.type == OptimizerType::kAdagrad) std::fill(a_.begin(), a_.end(), o.initial_accumulator);
  }

  void Step(std::vector<double>& p, std::span<const float> grad, double lr) {
    ++t_;
    for (std::size_t i = 0; i < p.size(); ++i) {
      const double g = grad[i];
      switch (o_.type) {
        case OptimizerType::kSgd:
          p[i] -= lr * g;
          break;
        case OptimizerType::kMomentum:
          a_[i] = o_.momentum * a_[i] + g;
          p[i] -= lr * (o_.nesterov ? g + o_.momentum * a_[i] : a_[i]);
          break;
        case OptimizerType::kAdagrad:
          a_[i] += g * g;
          p[i] -= lr * g / (std::sqrt(a_[i]) + o_.eps);
          break;
        case OptimizerType::kAdam: {
          a_[i] = o_.beta1 * a_[i] + (1.0 - o_.beta1) * g;
          b_[i] = o_.beta2 * b_[i] + (1.0 - o_.beta2) * g * g;
          const double m_hat = a_[i] / (1.0 - std::pow(double{o_.beta1}, t_));
          const double v_hat = b_[i] / (1.0 - std::pow(double{o_.beta2}, t_));
          p[i] -= lr * m_hat / (std::sqrt(v_hat) + o_.eps);
          break;
        }
        case OptimizerType::kFtrl: {
          const double alpha = o_.alpha, beta = o_.beta, l1 = o_.l1, l2 = o_.l2;
          if (t_ == 1) a_[i] = -p[i] * beta / alpha;  // the first proximal term's centre
          const double n = b_[i] + g * g;
          a_[i] += g - (std::sqrt(n) - std::sqrt(b_[i])) / alpha * p[i];
          b_[i] = n;
          p[i] = std::abs(a_[i]) <= l1
                     ? 0.0
                     : -(a_[i] - std::copysign(l1, a_[i])) / ((beta + std::sqrt(n)) / alpha + l2);
          break;
        }
        case OptimizerType::kLbfgs:  // not a step optimizer: never made
          break;
      }
    }
  }

  // The state vectors in the order StateVectors() promises.
  std::vector<const std::vector<double>*> State() const {
    switch (o_.type) {
      case OptimizerType::kSgd:
        return {};
      case OptimizerType::kMomentum:
      case OptimizerType::kAdagrad:
        return {&a_};
      case OptimizerType::kAdam:
      case OptimizerType::kFtrl:
        return {&a_, &b_};
      case OptimizerType::kLbfgs:
        break;
    }
    return {};
  }

 private:
  OptimizerOptions o_;
  std::vector<double> a_, b_;  // velocity | accumulator | m, and Adam's v | FTRL's z and n
  int t_ = 0;
};

void ExpectClose(std::span<const float> actual, const std::vector<double>& expected,
                 const std::string& what) {
  BOOST_REQUIRE_EQUAL(actual.size(), expected.size());
  std::size_t bad = 0, first = 0;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double tolerance = 1e-5 * std::max(1.0, std::abs(expected[i]));
    if (!(std::abs(actual[i] - expected[i]) <= tolerance) && bad++ == 0) first = i;
  }
  BOOST_TEST(bad == 0u, what << ": " << bad << " of " << actual.size() << " differ, first at "
                             << first << ": " << actual[first] << " vs reference "
                             << expected[first]);
}

BOOST_AUTO_TEST_SUITE(optim)

BOOST_AUTO_TEST_CASE(each_optimizer_matches_its_scalar_reference) {
  // Sizes below, at and above the vector width, so full blocks and the padded tail both count.
  for (std::size_t n : {1u, 5u, 16u, 1037u}) {
    for (const OptimizerOptions& o : AllConfigs()) {
      const std::string what = Describe(o) + " n=" + std::to_string(n);
      auto opt = MakeOptimizer(o, 0, n);
      Reference ref(o, n);
      FloatBuffer params = Random(n, 1);
      std::vector<double> expected(params.begin(), params.end());
      for (int step = 0; step < 5; ++step) {
        const FloatBuffer grad = Random(n, 100 + step);
        opt->Step(params, grad, StepLr(step));
        ref.Step(expected, grad, StepLr(step));
      }
      ExpectClose(params, expected, what + " params");
      const auto state = opt->StateVectors();
      const auto ref_state = ref.State();
      BOOST_REQUIRE_EQUAL(state.size(), ref_state.size());
      for (std::size_t s = 0; s < state.size(); ++s) {
        ExpectClose(state[s], *ref_state[s], what + " state " + std::to_string(s));
      }
      BOOST_TEST(opt->steps() == 5u);
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_first_step_moves_each_parameter_by_lr_against_the_gradient_sign) {
  // With bias correction m_hat = g and v_hat = g^2 after one step, so the update is lr * sign(g).
  const std::size_t n = 100;
  auto opt = MakeOptimizer({.type = OptimizerType::kAdam, .eps = 1e-12f}, 0, n);
  FloatBuffer params(n, 1.0f);
  const FloatBuffer grad = Random(n, 7);
  opt->Step(params, grad, 0.1f);
  for (std::size_t i = 0; i < n; ++i) {
    BOOST_TEST(params[i] == (grad[i] > 0 ? 0.9f : 1.1f), boost::test_tools::tolerance(1e-5f));
  }
}

BOOST_AUTO_TEST_CASE(optimizer_on_a_range_touches_nothing_outside_it) {
  const std::size_t n = 1000, begin = 123, end = 777;
  for (const OptimizerOptions& o : AllConfigs()) {
    auto opt = MakeOptimizer(o, begin, end);
    BOOST_TEST(opt->begin() == begin);
    BOOST_TEST(opt->end() == end);
    BOOST_TEST(opt->size() == end - begin);
    for (const std::span<float> s : opt->StateVectors()) BOOST_TEST(s.size() == end - begin);

    FloatBuffer params = Random(n, 2);
    const FloatBuffer before = params;
    const FloatBuffer grad = Random(n, 3);
    for (int step = 0; step < 3; ++step) {
      opt->Step(std::span(params).subspan(begin, end - begin),
                std::span(grad).subspan(begin, end - begin), StepLr(step));
    }
    const std::span<const float> p(params), b(before);
    BOOST_TEST(BitEqual(p.first(begin), b.first(begin)), Describe(o) << ": prefix changed");
    BOOST_TEST(BitEqual(p.subspan(end), b.subspan(end)), Describe(o) << ": suffix changed");
    std::size_t unchanged = 0;
    for (std::size_t i = begin; i < end; ++i) unchanged += params[i] == before[i];
    BOOST_TEST(unchanged == 0u, Describe(o) << ": " << unchanged << " parameters in range kept");
  }
}

BOOST_AUTO_TEST_CASE(shards_equal_one_optimizer_bit_for_bit) {
  const std::size_t n = 1000;
  // Where the shards are cut: two shards split on and off the vector width (including an empty
  // left shard), and many shards starting at odd offsets, 1 to 263 long, so that an element in
  // one optimizer's vector body falls in a shard's scalar tail or a short vector loop; on every
  // CPU, so in whichever build of the pass (AVX-512, AVX2, any x86-64) the CPU picks.
  const std::vector<std::vector<std::size_t>> cut_lists = {
      {0}, {1}, {7}, {16}, {333}, {999}, {1, 4, 21, 38, 71, 104, 237, 500, 531, 999}};
  for (const OptimizerOptions& o : AllConfigs()) {
    for (const std::vector<std::size_t>& cuts : cut_lists) {
      std::vector<std::size_t> bounds = {0};
      bounds.insert(bounds.end(), cuts.begin(), cuts.end());
      bounds.push_back(n);
      auto whole = MakeOptimizer(o, 0, n);
      std::vector<std::unique_ptr<Optimizer>> shards;
      for (std::size_t s = 0; s + 1 < bounds.size(); ++s) {
        shards.push_back(MakeOptimizer(o, bounds[s], bounds[s + 1]));
      }
      FloatBuffer p_whole = Random(n, 4);
      FloatBuffer p_shards = p_whole;
      for (int step = 0; step < 4; ++step) {
        const FloatBuffer grad = Random(n, 200 + step);
        const std::span<const float> g(grad);
        whole->Step(p_whole, g, StepLr(step));
        for (const auto& shard : shards) {
          shard->Step(std::span(p_shards).subspan(shard->begin(), shard->size()),
                      g.subspan(shard->begin(), shard->size()), StepLr(step));
        }
      }
      std::string what = Describe(o) + " cut at";
      for (std::size_t k : cuts) {
        what += ' ';
        what += std::to_string(k);
      }
      BOOST_TEST(BitEqual(p_whole, p_shards), what << ": parameters differ");
      const auto s_whole = whole->StateVectors();
      for (const auto& shard : shards) {
        const auto s_shard = shard->StateVectors();
        for (std::size_t s = 0; s < s_whole.size(); ++s) {
          BOOST_TEST(BitEqual(s_whole[s].subspan(shard->begin(), shard->size()), s_shard[s]),
                     what << ": state " << s << " of the shard at " << shard->begin());
        }
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_step_from_gradient_blocks_equals_a_step_from_the_whole_gradient) {
  // Sizes below, at and across block boundaries, with a tail off the vector width.
  for (std::size_t n :
       {std::size_t{5}, Optimizer::kGradientBlock, 2 * Optimizer::kGradientBlock + 13}) {
    for (const OptimizerOptions& o : AllConfigs()) {
      auto whole = MakeOptimizer(o, 0, n);
      auto blocks = MakeOptimizer(o, 0, n);
      FloatBuffer p_whole = Random(n, 5);
      FloatBuffer p_blocks = p_whole;
      std::size_t covered = 0;
      for (int step = 0; step < 4; ++step) {
        const FloatBuffer grad = Random(n, 300 + step);
        whole->Step(p_whole, grad, StepLr(step));
        covered = 0;
        blocks->StepFromBlocks(
            p_blocks,
            [&](std::size_t offset, std::span<float> out) {
              BOOST_TEST(offset == covered);  // in order, no gaps
              std::copy_n(grad.begin() + static_cast<std::ptrdiff_t>(offset), out.size(),
                          out.begin());
              covered += out.size();
            },
            StepLr(step));
      }
      const std::string what = Describe(o) + " over " + std::to_string(n);
      BOOST_TEST(covered == n, what);
      BOOST_TEST(blocks->steps() == whole->steps(), what);
      BOOST_TEST(BitEqual(p_whole, p_blocks), what << ": parameters differ");
      const auto s_whole = whole->StateVectors();
      const auto s_blocks = blocks->StateVectors();
      for (std::size_t s = 0; s < s_whole.size(); ++s) {
        BOOST_TEST(BitEqual(s_whole[s], s_blocks[s]), what << ": state " << s);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(a_step_shared_by_threads_equals_a_step_on_one) {
  // Large enough for the team to take part, with a tail off the parts' alignment.
  const std::size_t n = (std::size_t{1} << 16) + 37;
  math::ThreadTeam team(3);
  for (const OptimizerOptions& o : AllConfigs()) {
    auto alone = MakeOptimizer(o, 0, n);
    auto shared = MakeOptimizer(o, 0, n);
    shared->set_team(&team);
    FloatBuffer p_alone = Random(n, 5);
    FloatBuffer p_shared = p_alone;
    for (int step = 0; step < 3; ++step) {
      const FloatBuffer grad = Random(n, 400 + step);
      alone->Step(p_alone, grad, StepLr(step));
      shared->Step(p_shared, grad, StepLr(step));
    }
    BOOST_TEST(BitEqual(p_alone, p_shared), Describe(o) << ": parameters differ");
    const auto s_alone = alone->StateVectors();
    const auto s_shared = shared->StateVectors();
    for (std::size_t s = 0; s < s_alone.size(); ++s) {
      BOOST_TEST(BitEqual(s_alone[s], s_shared[s]), Describe(o) << ": state " << s);
    }
  }
}

BOOST_AUTO_TEST_CASE(two_optimizers_sharing_moved_state_step_halves_like_one) {
  // Two replicas' optimizers over the whole range, their state moved into one shared buffer after
  // a first step apiece, each stepping its own half in parts (the second from gradient blocks):
  // one optimizer's bits, and the moved state starts from where each was.
  const std::size_t n = 3 * Optimizer::kGradientBlock + 5, half = 1 + n / 2;
  for (const OptimizerOptions& o : AllConfigs()) {
    auto whole = MakeOptimizer(o, 0, n);
    auto first = MakeOptimizer(o, 0, n);
    auto second = MakeOptimizer(o, 0, n);
    FloatBuffer p_whole = Random(n, 6);
    FloatBuffer p_shared = p_whole;
    const FloatBuffer grad0 = Random(n, 500);
    whole->Step(p_whole, grad0, StepLr(0));
    FloatBuffer p_second = p_shared;
    first->Step(p_shared, grad0, StepLr(0));
    second->Step(p_second, grad0, StepLr(0));
    FloatBuffer state(static_cast<std::size_t>(StateVectorCount(o.type)) * n, -1.0f);
    first->MoveStateTo(state);
    second->MoveStateTo(state);
    for (int step = 1; step < 4; ++step) {
      const FloatBuffer grad = Random(n, 500 + step);
      const std::span<float> p(p_shared);
      const std::span<const float> g(grad);
      whole->Step(p_whole, grad, StepLr(step));
      first->StepPart(0, p.first(half), g.first(half), StepLr(step));
      std::size_t next = half;  // the blocks come in order, without gaps, from `half` on
      second->StepPartFromBlocks(
          half, p.subspan(half),
          [&](std::size_t offset, std::span<float> out) {
            BOOST_TEST(offset == next);
            std::copy_n(grad.begin() + static_cast<std::ptrdiff_t>(offset), out.size(),
                        out.begin());
            next += out.size();
          },
          StepLr(step));
      BOOST_TEST(next == n);
      first->EndPartedStep();
      second->EndPartedStep();
    }
    BOOST_TEST(BitEqual(p_whole, p_shared), Describe(o) << ": parameters differ");
    BOOST_TEST(first->steps() == whole->steps());
    const auto s_whole = whole->StateVectors();
    const auto s_first = first->StateVectors();
    BOOST_REQUIRE_EQUAL(s_first.size(), s_whole.size());
    for (std::size_t s = 0; s < s_whole.size(); ++s) {
      BOOST_TEST(s_first[s].data() == state.data() + s * n);
      BOOST_TEST(BitEqual(s_whole[s], s_first[s]), Describe(o) << ": state " << s);
    }
  }
}

BOOST_AUTO_TEST_CASE(fresh_optimizer_starts_from_the_documented_state) {
  const std::size_t n = 40;
  const std::size_t expected_vectors[] = {0, 1, 1, 1, 2, 2};  // in AllConfigs() order
  const auto configs = AllConfigs();
  for (std::size_t c = 0; c < configs.size(); ++c) {
    const OptimizerOptions& o = configs[c];
    auto opt = MakeOptimizer(o, 10, 10 + n);
    BOOST_TEST((opt->type() == o.type));
    BOOST_TEST(opt->steps() == 0u);
    const auto state = opt->StateVectors();
    BOOST_REQUIRE_EQUAL(state.size(), expected_vectors[c]);
    const float initial = o.type == OptimizerType::kAdagrad ? o.initial_accumulator : 0.0f;
    for (const std::span<float> s : state) {
      BOOST_TEST(s.size() == n);
      BOOST_TEST(std::all_of(s.begin(), s.end(), [&](float x) { return x == initial; }),
                 Describe(o));
    }
  }
}

BOOST_AUTO_TEST_CASE(restored_state_continues_bit_for_bit) {
  const std::size_t n = 517;
  for (const OptimizerOptions& o : AllConfigs()) {
    auto saved = MakeOptimizer(o, 0, n);
    FloatBuffer p_saved = Random(n, 5);
    for (int step = 0; step < 3; ++step) saved->Step(p_saved, Random(n, 300 + step), StepLr(step));

    // A checkpoint holds the parameters, the state vectors and the step count.
    auto restored = MakeOptimizer(o, 0, n);
    FloatBuffer p_restored = p_saved;
    const auto from = saved->StateVectors();
    const auto to = restored->StateVectors();
    for (std::size_t s = 0; s < from.size(); ++s) std::ranges::copy(from[s], to[s].begin());
    restored->set_steps(saved->steps());

    for (int step = 3; step < 6; ++step) {
      const FloatBuffer grad = Random(n, 300 + step);
      saved->Step(p_saved, grad, StepLr(step));
      restored->Step(p_restored, grad, StepLr(step));
    }
    BOOST_TEST(BitEqual(p_saved, p_restored), Describe(o) << ": parameters diverged");
    BOOST_TEST(restored->steps() == 6u);
    const auto s_saved = saved->StateVectors();
    const auto s_restored = restored->StateVectors();
    for (std::size_t s = 0; s < s_saved.size(); ++s) {
      BOOST_TEST(BitEqual(s_saved[s], s_restored[s]), Describe(o) << ": state " << s);
    }
  }
}

BOOST_AUTO_TEST_CASE(adam_needs_its_step_count_restored) {
  // The step count is part of Adam's state: the same vectors with steps() = 0 step differently.
  const std::size_t n = 64;
  const OptimizerOptions o{.type = OptimizerType::kAdam};
  auto saved = MakeOptimizer(o, 0, n);
  FloatBuffer params = Random(n, 6);
  for (int step = 0; step < 3; ++step) saved->Step(params, Random(n, 400 + step), 0.01f);
  auto forgetful = MakeOptimizer(o, 0, n);
  const auto from = saved->StateVectors();
  const auto to = forgetful->StateVectors();
  for (std::size_t s = 0; s < from.size(); ++s) std::ranges::copy(from[s], to[s].begin());
  FloatBuffer p_forgetful = params;
  const FloatBuffer grad = Random(n, 500);
  saved->Step(params, grad, 0.01f);
  forgetful->Step(p_forgetful, grad, 0.01f);
  BOOST_TEST(!BitEqual(params, p_forgetful));
}

BOOST_AUTO_TEST_CASE(each_optimizer_converges_on_a_quadratic) {
  // f(p) = 1/2 sum_i a_i (p_i - c_i)^2 with curvatures a_i in [0.5, 2]; gradient a_i (p_i - c_i).
  const std::size_t n = 64;
  std::mt19937 rng(8);
  std::uniform_real_distribution<float> curvature(0.5f, 2.0f), centre(-3.0f, 3.0f);
  FloatBuffer a(n), c(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = curvature(rng);
    c[i] = centre(rng);
  }
  auto loss = [&](const FloatBuffer& p) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += 0.5 * a[i] * (p[i] - c[i]) * (p[i] - c[i]);
    return sum;
  };
  const float lrs[] = {0.5f, 0.1f, 0.1f, 0.5f, 0.05f};  // in AllConfigs() order
  const auto configs = AllConfigs();
  for (std::size_t k = 0; k < configs.size(); ++k) {
    auto opt = MakeOptimizer(configs[k], 0, n);
    FloatBuffer p(n, 0.0f), grad(n);
    const double initial = loss(p);
    for (int step = 0; step < 1000; ++step) {
      for (std::size_t i = 0; i < n; ++i) grad[i] = a[i] * (p[i] - c[i]);
      opt->Step(p, grad, lrs[k]);
    }
    BOOST_TEST(loss(p) < 1e-6 * initial, Describe(configs[k])
                                             << ": loss " << loss(p) << " from " << initial);
  }
}

BOOST_AUTO_TEST_CASE(options_are_validated_per_type) {
  for (const OptimizerOptions& o : AllConfigs()) {
    BOOST_TEST(ValidateOptimizerOptions(o).ok(), Describe(o));
  }
  // Fields of other types are ignored.
  BOOST_TEST(ValidateOptimizerOptions({.type = OptimizerType::kSgd, .momentum = 5.0f}).ok());

  const OptimizerOptions bad[] = {
      {.type = OptimizerType::kMomentum, .momentum = 1.0f},
      {.type = OptimizerType::kMomentum, .momentum = -0.1f},
      {.type = OptimizerType::kMomentum, .momentum = std::nanf("")},
      {.type = OptimizerType::kMomentum, .momentum = 0.0f, .nesterov = true},
      {.type = OptimizerType::kAdam, .beta1 = 1.0f},
      {.type = OptimizerType::kAdam, .beta2 = 1.5f},
      {.type = OptimizerType::kAdam, .eps = 0.0f},
      {.type = OptimizerType::kAdagrad, .eps = -1e-8f},
      {.type = OptimizerType::kAdagrad, .initial_accumulator = -0.1f},
      {.type = OptimizerType::kFtrl, .alpha = 0.0f},
      {.type = OptimizerType::kFtrl, .l2 = -0.5f},
  };
  for (const OptimizerOptions& o : bad) {
    const Status s = ValidateOptimizerOptions(o);
    BOOST_TEST(!s.ok(), Describe(o));
    BOOST_TEST(s.message().find(OptimizerTypeName(o.type)) != std::string::npos, s.message());
  }
}

BOOST_AUTO_TEST_CASE(optimizer_names_round_trip_and_a_bad_name_lists_the_choices) {
  BOOST_TEST(OptimizerTypeChoices() == "sgd, momentum, adagrad, adam, lbfgs, ftrl");
  for (OptimizerType t : {OptimizerType::kSgd, OptimizerType::kMomentum, OptimizerType::kAdagrad,
                          OptimizerType::kAdam, OptimizerType::kFtrl}) {
    const Result<OptimizerType> parsed = ParseOptimizerType(OptimizerTypeName(t));
    BOOST_REQUIRE(parsed.ok());
    BOOST_TEST((parsed.value() == t));
    BOOST_TEST(OptimizerTypeChoices().find(OptimizerTypeName(t)) != std::string_view::npos);
  }
  const Result<OptimizerType> bad = ParseOptimizerType("rmsprop");
  BOOST_REQUIRE(!bad.ok());
  BOOST_TEST(bad.status().message().find("'rmsprop'") != std::string::npos);
  BOOST_TEST(bad.status().message().find(OptimizerTypeChoices()) != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace optimizer_test
}  // namespace dtrain::optim
