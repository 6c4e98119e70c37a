// Synthetic clicks: a pure function of the seed; features from a power law (the first ones in
// most rows, most never seen); labels drawn from the planted probabilities, which rank them well.
#include "core/data/click_synthetic.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <numeric>
#include <vector>

#include "common/temp_dir.h"
#include "core/train/auc.h"

namespace dtrain::data {
namespace click_synthetic_test {

BOOST_AUTO_TEST_SUITE(click_synthetic)

BOOST_AUTO_TEST_CASE(power_law_features_and_labels_from_the_planted_model) {
  const ClickOptions o{.rows = 20000, .features = 1'000'000, .nonzeros = 40, .seed = 3};
  const ClickData a = MakeClicks(o);
  const ClickData b = MakeClicks(o);
  BOOST_TEST(a.rows.index == b.rows.index, boost::test_tools::per_element());
  BOOST_TEST(a.rows.labels == b.rows.labels, boost::test_tools::per_element());
  BOOST_TEST(a.rows.rows() == o.rows);
  BOOST_TEST(a.rows.features == o.features);
  // 40 draws a row; the few repeats (features 0, 1, 2 are each drawn with probability ~5 %,
  // 3 %, 2 %) merge into one entry of value 2 or more.
  BOOST_TEST(a.rows.NonZeros() > 36u * o.rows);
  BOOST_TEST(std::accumulate(a.rows.value.begin(), a.rows.value.end(), 0.0) == 40.0 * o.rows);

  // P(feature <= x) = ln(x + 1) / ln(F + 1): the first 1000 features take half of the draws.
  std::vector<std::size_t> counts(o.features, 0);
  for (std::size_t e = 0; e < a.rows.NonZeros(); ++e)
    counts[a.rows.index[e]] += static_cast<std::size_t>(a.rows.value[e]);
  const double first = std::accumulate(counts.begin(), counts.begin() + 1000, 0.0);
  BOOST_TEST(first / (40.0 * o.rows) == std::log(1001.0) / std::log(1e6 + 1.0),
             boost::test_tools::tolerance(0.02));
  BOOST_TEST(counts[0] > 20 * counts[100]);  // ~ (ln 2) / (ln 102 - ln 101): ~70x
  const auto unseen = std::count(counts.begin(), counts.end(), std::size_t{0});
  BOOST_TEST(unseen > 500'000);

  // Labels follow the probabilities: the mean within 4 standard errors, and the planted model
  // ranks its own rows well.
  const double clicks = std::accumulate(a.rows.labels.begin(), a.rows.labels.end(), 0.0);
  const double expected = std::accumulate(a.probability.begin(), a.probability.end(), 0.0);
  BOOST_TEST(std::abs(clicks - expected) < 4.0 * std::sqrt(expected));
  BOOST_TEST_MESSAGE("click rate " << clicks / o.rows << ", planted AUC "
                                   << train::Auc(a.probability, a.rows.labels));
  BOOST_TEST(train::Auc(a.probability, a.rows.labels) > 0.7);
  BOOST_TEST(PlantedWeight(o, 12345) == PlantedWeight(o, 12345));
}

BOOST_AUTO_TEST_CASE(written_as_libsvm_they_read_back_the_same) {
  const ClickData clicks = MakeClicks({.rows = 200, .features = 5000, .nonzeros = 10, .seed = 8});
  testing::TempDir dir;
  const std::string path = dir.Path("clicks.svm");
  BOOST_TEST_REQUIRE(WriteLibsvm(clicks.rows, path).ok());
  const Result<SparseRows> back = ReadLibsvmSparse(path, {.features = 5000});
  BOOST_TEST_REQUIRE(back.ok(), back.status().message());
  BOOST_TEST(back.value().index == clicks.rows.index, boost::test_tools::per_element());
  BOOST_TEST(back.value().value == clicks.rows.value, boost::test_tools::per_element());
  BOOST_TEST(back.value().row_start == clicks.rows.row_start, boost::test_tools::per_element());
  BOOST_TEST(back.value().labels == clicks.rows.labels, boost::test_tools::per_element());
  BOOST_TEST(!WriteLibsvm(clicks.rows, dir.Path("no/such/dir/x.svm")).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace click_synthetic_test
}  // namespace dtrain::data
