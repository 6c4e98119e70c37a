// libsvm read into compressed sparse rows: indices up to 2^32 - 1 without a dense copy, rows
// sorted with repeated features summed, feature hashing of any name, and the same data as the
// dense reader gives.
#include "core/data/sparse_rows.h"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "core/data/readers.h"

namespace dtrain::data {
namespace sparse_rows_test {

using dtrain::testing::TempDir;

std::vector<std::uint32_t> Indices(const SparseRows& d, std::size_t row) {
  return {d.Index(row).begin(), d.Index(row).end()};
}
std::vector<float> Values(const SparseRows& d, std::size_t row) {
  return {d.Value(row).begin(), d.Value(row).end()};
}

BOOST_AUTO_TEST_SUITE(sparse_rows)

BOOST_AUTO_TEST_CASE(indices_up_to_two_to_the_32_stay_sparse) {
  TempDir dir;
  const std::string path = dir.Write("big.svm",
                                     "1 4294967295:0.5 7:2\n"
                                     "# comment\n"
                                     "0 3:1 3:2 1:-1\n"
                                     "1\n");
  const Result<SparseRows> r = ReadLibsvmSparse(path, {});
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  const SparseRows& d = r.value();
  BOOST_TEST(d.rows() == 3u);
  BOOST_TEST(d.features == 4294967295u);  // the largest index seen
  BOOST_TEST(d.NonZeros() == 4u);         // row 2's two 3s are one
  BOOST_TEST(Indices(d, 0) == (std::vector<std::uint32_t>{6, 4294967294u}),
             boost::test_tools::per_element());
  BOOST_TEST(Values(d, 0) == (std::vector<float>{2, 0.5f}), boost::test_tools::per_element());
  BOOST_TEST(Indices(d, 1) == (std::vector<std::uint32_t>{0, 2}), boost::test_tools::per_element());
  BOOST_TEST(Values(d, 1) == (std::vector<float>{-1, 3}), boost::test_tools::per_element());
  BOOST_TEST(d.Index(2).empty());
  BOOST_TEST(d.labels == (std::vector<float>{1, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(d.num_classes == 2);
  BOOST_TEST(d.Bytes() < 200u);  // proportional to the non-zeros, not the features

  const std::string beyond = dir.Write("beyond.svm", "1 4294967296:1\n");
  const Result<SparseRows> too_big = ReadLibsvmSparse(beyond, {});
  BOOST_TEST_REQUIRE(!too_big.ok());
  BOOST_TEST(too_big.status().message() ==
             beyond + ": line 1, column 3: the feature index is out of range 1..4294967295");
}

BOOST_AUTO_TEST_CASE(hashing_takes_any_name_and_sums_collisions) {
  TempDir dir;
  const std::string path =
      dir.Write("hashed.svm", "1 user=ada:1 ad=17:1 42:0.5\n0 user=bob:1 user=bob:2\n");
  const Result<SparseRows> r = ReadLibsvmSparse(path, {.hash_bits = 20});
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  const SparseRows& d = r.value();
  BOOST_TEST(d.features == (1u << 20));
  BOOST_TEST(d.Index(0).size() == 3u);
  for (std::uint32_t i : d.Index(0)) BOOST_TEST(i < (1u << 20));
  BOOST_TEST(Indices(d, 1) == (std::vector<std::uint32_t>{HashFeature("user=bob", 20)}),
             boost::test_tools::per_element());
  BOOST_TEST(Values(d, 1) == (std::vector<float>{3}), boost::test_tools::per_element());
  // A model trained on hashed features depends on the hash: it must never change.
  BOOST_TEST(HashFeature("user=ada", 32) == 3732181568u);  // computed apart, in Python
  BOOST_TEST(HashFeature("user=ada", 20) == 3732181568u >> 12);
  BOOST_TEST(HashFeature("42", 1) <= 1u);

  const Result<SparseRows> bad = ReadLibsvmSparse(path, {.hash_bits = 33});
  BOOST_TEST_REQUIRE(!bad.ok());
  BOOST_TEST(bad.status().message().find("hash_bits must be in [0, 32]") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(densified_it_is_what_the_dense_reader_gives) {
  TempDir dir;
  const std::string path = dir.Write("a.svm", "+1 1:0.5 4:-2\n-1 2:3 # c\n1\t3:1e-1  1:7\n");
  const Result<SparseRows> sparse = ReadLibsvmSparse(path, {.features = 4});
  const Result<Dataset> dense = ReadLibsvm(path, 4);
  BOOST_TEST_REQUIRE(sparse.ok());
  BOOST_TEST_REQUIRE(dense.ok());
  const Dataset again = Densify(sparse.value());
  BOOST_TEST(again.rows == dense.value().rows);
  BOOST_TEST(again.features == dense.value().features);
  BOOST_TEST((std::vector<float>(again.floats.begin(), again.floats.end()) ==
              std::vector<float>(dense.value().floats.begin(), dense.value().floats.end())));
  BOOST_TEST(again.labels == dense.value().labels, boost::test_tools::per_element());
  BOOST_TEST(again.num_classes == dense.value().num_classes);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sparse_rows_test
}  // namespace dtrain::data
