// The plan's rules: which tensors each method compresses (where that saves at least three
// quarters), what one replica sends for each, and the method's job-file names.
#include "core/compress/compression_plan.h"

#include <boost/test/unit_test.hpp>
#include <vector>

namespace dtrain::compress {
namespace compression_plan_test {

// Tensors tiling a parameter vector in order, from their shapes.
std::vector<model::ParamTensor> Tensors(std::vector<std::pair<std::size_t, std::size_t>> shapes) {
  std::vector<model::ParamTensor> tensors;
  std::size_t offset = 0;
  for (const auto& [rows, cols] : shapes) {
    tensors.push_back({.offset = offset, .rows = rows, .cols = cols, .name = "t"});
    offset += rows * cols;
  }
  return tensors;
}

TensorPlan PlanOne(std::size_t rows, std::size_t cols, const Settings& settings) {
  return PlanCompression(Tensors({{rows, cols}}), settings).front();
}

BOOST_AUTO_TEST_SUITE(compression_plan)

BOOST_AUTO_TEST_CASE(none_sends_every_tensor_raw) {
  const std::vector<TensorPlan> plan =
      PlanCompression(Tensors({{100, 100}, {1, 100}}), Settings{.method = Method::kNone});
  for (const TensorPlan& t : plan) {
    BOOST_TEST(EncodingName(t.encoding) == "raw");
    BOOST_TEST(t.sent_floats == t.tensor.count());
  }
  BOOST_TEST(PlanFloats(plan) == 10100u);
  BOOST_TEST(PlanSentFloats(plan) == 10100u);
}

BOOST_AUTO_TEST_CASE(bf16_halves_every_tensor_rounding_up) {
  const Settings s{.method = Method::kBf16};
  const std::vector<TensorPlan> plan = PlanCompression(Tensors({{3, 5}, {1, 4}}), s);
  BOOST_TEST(EncodingName(plan[0].encoding) == "bf16");
  BOOST_TEST(plan[0].sent_floats == 8u);  // 15 values
  BOOST_TEST(EncodingName(plan[1].encoding) == "bf16");
  BOOST_TEST(plan[1].sent_floats == 2u);
  BOOST_TEST(PlanSentFloats(plan) == 10u);
}

BOOST_AUTO_TEST_CASE(powersgd_factors_a_matrix_whose_factors_are_a_quarter_at_most) {
  const Settings s{.method = Method::kPowerSgd, .rank = 4};
  const TensorPlan big = PlanOne(100, 100, s);
  BOOST_TEST(EncodingName(big.encoding) == "low rank");
  BOOST_TEST(big.sent_floats == 800u);  // 4 * (100 + 100)
  BOOST_TEST(big.rank == 4);
  // 32 x 32: factors of 256 floats, exactly a quarter of 1024.
  BOOST_TEST(EncodingName(PlanOne(32, 32, s).encoding) == "low rank");
  // 31 x 31: 248 floats, more than a quarter of 961.
  const TensorPlan small = PlanOne(31, 31, s);
  BOOST_TEST(EncodingName(small.encoding) == "raw");
  BOOST_TEST(small.sent_floats == 961u);
  // Biases: one row.
  BOOST_TEST(EncodingName(PlanOne(1, 10000, s).encoding) == "raw");
  BOOST_TEST(EncodingName(PlanOne(20, 10000, s).encoding) == "low rank");
}

BOOST_AUTO_TEST_CASE(topk_sends_pairs_where_they_are_a_quarter_at_most) {
  const Settings s{.method = Method::kTopK, .fraction = 0.001};
  const TensorPlan big = PlanOne(100, 100, s);
  BOOST_TEST(EncodingName(big.encoding) == "sparse");
  BOOST_TEST(big.k == 10u);
  BOOST_TEST(big.sent_floats == 20u);
  // k rounds up and is at least 1: 8 values send one pair, a quarter; 7 go raw.
  const TensorPlan eight = PlanOne(1, 8, s);
  BOOST_TEST(EncodingName(eight.encoding) == "sparse");
  BOOST_TEST(eight.k == 1u);
  BOOST_TEST(EncodingName(PlanOne(1, 7, s).encoding) == "raw");
  BOOST_TEST(PlanOne(1, 1000, Settings{.method = Method::kTopK, .fraction = 0.0015}).k == 2u);
  // Half the values as pairs would be the whole tensor again.
  const TensorPlan half = PlanOne(10, 10, Settings{.method = Method::kTopK, .fraction = 0.5});
  BOOST_TEST(EncodingName(half.encoding) == "raw");
  BOOST_TEST(half.sent_floats == 100u);
}

BOOST_AUTO_TEST_CASE(methods_have_the_job_files_names) {
  for (const Method m : {Method::kNone, Method::kBf16, Method::kPowerSgd, Method::kTopK}) {
    const Result<Method> parsed = ParseMethod(MethodName(m));
    BOOST_TEST((parsed.ok() && parsed.value() == m));
  }
  const Result<Method> unknown = ParseMethod("zstd");
  BOOST_TEST(!unknown.ok());
  BOOST_TEST(unknown.status().message().find(MethodChoices()) != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compression_plan_test
}  // namespace dtrain::compress
