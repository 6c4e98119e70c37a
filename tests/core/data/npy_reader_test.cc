// ReadNpy: .npy and .npz features mapped in place and gathered as the same floats an in-memory
// copy gives (every dtype, any alignment, scaled, split, images of several channels in height,
// width, channel order), labels of every dtype, and the errors.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "common/npy_files.h"
#include "common/read_refusals.h"
#include "common/temp_dir.h"
#include "core/data/readers.h"

namespace dtrain::data {
namespace npy_reader_test {

using testing::CheckReadRefused;
using testing::NpyBytes;
using testing::NpyDict;
using testing::NpzBytes;
using testing::TempDir;
using testing::ValueBytes;

const std::vector<float> kValues = {0.5f,  -1.25f, 3.0f,  7.75f, -0.125f, 2.5f,
                                    1e-3f, 42.0f,  -8.0f, 0.0f,  6.5f,    -2.0f};  // 4 rows x 3

// The in-memory set of the same rows: what a mapped one must gather like.
Dataset FloatCopy(const std::vector<float>& values, std::size_t features) {
  Dataset d;
  d.rows = values.size() / features;
  d.features = features;
  d.floats.assign(values.begin(), values.end());
  d.labels.assign(d.rows, 0.0f);
  return d;
}

std::vector<float> Gather(const Dataset& d, const Scaling& s) {
  std::vector<std::uint32_t> rows(d.rows);
  std::iota(rows.begin(), rows.end(), 0u);
  std::vector<float> x(d.rows * d.features), y(d.rows);
  GatherBatch(d, s, rows, x.data(), y.data());
  return x;
}

Result<Dataset> Read(const std::string& path, const std::string& labels) {
  return ReadNpy(path, labels, NpyOptions{});
}

BOOST_AUTO_TEST_SUITE(npy_reader)

BOOST_AUTO_TEST_CASE(float32_features_are_mapped_and_gathered_as_their_values) {
  TempDir dir;
  const std::string x = dir.Write("x.npy", NpyBytes(NpyDict("<f4", "(4, 3)"), ValueBytes(kValues)));
  const std::string y =
      dir.Write("y.npy", NpyBytes(NpyDict("<i8", "(4,)"), ValueBytes<std::int64_t>({2, 0, 1, 2})));
  const Result<Dataset> r = Read(x, y);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  const Dataset& d = r.value();
  BOOST_TEST(d.rows == 4u);
  BOOST_TEST(d.features == 3u);
  BOOST_TEST(d.mapped != nullptr);
  BOOST_TEST(d.floats.empty());
  BOOST_TEST(!d.stored_as_bytes());
  BOOST_TEST(d.FeatureBytes() == 0u);
  BOOST_TEST(d.source == x);
  BOOST_TEST(d.labels == (std::vector<float>{2, 0, 1, 2}), boost::test_tools::per_element());
  BOOST_TEST(d.num_classes == 3);
  BOOST_TEST(Gather(d, ConstantScaling(1.0f)) == kValues, boost::test_tools::per_element());
  const Dataset copy = FloatCopy(kValues, 3);
  const Scaling mapped_scaling = FitStandardize(d), copy_scaling = FitStandardize(copy);
  BOOST_TEST(mapped_scaling.mean == copy_scaling.mean, boost::test_tools::per_element());
  BOOST_TEST(mapped_scaling.inv_std == copy_scaling.inv_std, boost::test_tools::per_element());
  BOOST_TEST(Gather(d, mapped_scaling) == Gather(copy, copy_scaling),
             boost::test_tools::per_element());
}

// In an archive the data sits at whatever offset the zip headers leave: unaligned float64 values
// gather as the floats they round to.
BOOST_AUTO_TEST_CASE(float64_features_at_any_alignment_in_an_npz) {
  TempDir dir;
  std::vector<double> doubles;
  std::vector<float> rounded;
  for (float v : kValues) {
    doubles.push_back(static_cast<double>(v) / 3.0);
    rounded.push_back(static_cast<float>(static_cast<double>(v) / 3.0));
  }
  const std::string npz = dir.Write(
      "t.npz", NpzBytes({{"features", NpyBytes(NpyDict("<f8", "(4, 3)"), ValueBytes(doubles))},
                         {"y", NpyBytes(NpyDict("<f4", "(4, 1)"),
                                        ValueBytes<float>({0.5f, 1.5f, -2.0f, 4.0f}))}}));
  NpyOptions options;
  options.features_array = "features";
  options.classification = false;
  const Result<Dataset> r = ReadNpy(npz, "", options);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  const Dataset& d = r.value();
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(d.mapped->data) % 8 != 0u);  // the zip's offset
  BOOST_TEST(d.source == npz + "[features]");
  BOOST_TEST(d.num_classes == 0);
  BOOST_TEST(d.labels == (std::vector<float>{0.5f, 1.5f, -2.0f, 4.0f}),
             boost::test_tools::per_element());
  BOOST_TEST(
      Gather(d, ConstantScaling(2.0f)) == Gather(FloatCopy(rounded, 3), ConstantScaling(2.0f)),
      boost::test_tools::per_element());
  const Dataset copy = FloatCopy(rounded, 3);
  BOOST_TEST(Gather(d, FitStandardize(d)) == Gather(copy, FitStandardize(copy)),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(uint8_images_keep_their_height_and_width) {
  TempDir dir;
  std::vector<std::uint8_t> pixels(2 * 2 * 3);
  std::iota(pixels.begin(), pixels.end(), std::uint8_t{250 - 11});
  for (const char* shape : {"(2, 2, 3)", "(2, 1, 2, 3)"}) {
    const std::string x = dir.Write("x.npy", NpyBytes(NpyDict("|u1", shape), ValueBytes(pixels)));
    const std::string y =
        dir.Write("y.npy", NpyBytes(NpyDict("|u1", "(2,)"), ValueBytes<std::uint8_t>({1, 0})));
    const Result<Dataset> r = Read(x, y);
    BOOST_TEST_REQUIRE(r.ok(), r.status().message());
    BOOST_TEST(r.value().features == 6u);
    BOOST_TEST(r.value().image_height == 2u);
    BOOST_TEST(r.value().image_width == 3u);
    std::vector<float> expected;
    for (std::uint8_t p : pixels) expected.push_back(static_cast<float>(p) * (1.0f / 255.0f));
    BOOST_TEST(Gather(r.value(), ConstantScaling(255.0f)) == expected,
               boost::test_tools::per_element());
  }
}

// A 2 x 3 x 4 x 5 (rows, channels, height, width) array whose every value is its own index in
// the file, so each gathered value tells the n, c, h, w it came from: rows come back in height,
// width, channel order, for every dtype, scaled and standardised as the same rows stored in that
// order, and in any row order.
BOOST_AUTO_TEST_CASE(images_of_several_channels_are_gathered_in_height_width_channel_order) {
  constexpr std::size_t kRows = 2, kChannels = 3, kHeight = 4, kWidth = 5;
  constexpr std::size_t kFeatures = kChannels * kHeight * kWidth;
  std::vector<float> stored(kRows * kFeatures), expected(kRows * kFeatures);
  std::iota(stored.begin(), stored.end(), 0.0f);
  for (std::size_t n = 0; n < kRows; ++n) {
    for (std::size_t c = 0; c < kChannels; ++c) {
      for (std::size_t h = 0; h < kHeight; ++h) {
        for (std::size_t w = 0; w < kWidth; ++w) {
          expected[n * kFeatures + (h * kWidth + w) * kChannels + c] =
              static_cast<float>(((n * kChannels + c) * kHeight + h) * kWidth + w);
        }
      }
    }
  }
  const std::vector<std::pair<std::string, std::string>> dtypes = {
      {"<f4", ValueBytes(stored)},
      {"<f8", ValueBytes(std::vector<double>(stored.begin(), stored.end()))},
      {"|u1", ValueBytes(std::vector<std::uint8_t>(stored.begin(), stored.end()))}};
  TempDir dir;
  for (const auto& [descr, bytes] : dtypes) {
    BOOST_TEST_CONTEXT(descr) {
      const std::string x = dir.Write("x.npy", NpyBytes(NpyDict(descr, "(2, 3, 4, 5)"), bytes));
      const Result<Dataset> r = ReadNpy(x, "", NpyOptions{});
      BOOST_TEST_REQUIRE(r.ok(), r.status().message());
      const Dataset& d = r.value();
      BOOST_TEST(d.features == kFeatures);
      BOOST_TEST(d.image_channels == kChannels);
      BOOST_TEST(d.image_height == kHeight);
      BOOST_TEST(d.image_width == kWidth);
      BOOST_TEST(Gather(d, ConstantScaling(1.0f)) == expected, boost::test_tools::per_element());
      const Dataset copy = FloatCopy(expected, kFeatures);
      BOOST_TEST(Gather(d, ConstantScaling(4.0f)) == Gather(copy, ConstantScaling(4.0f)),
                 boost::test_tools::per_element());
      const Scaling mapped_scaling = FitStandardize(d), copy_scaling = FitStandardize(copy);
      BOOST_TEST(mapped_scaling.mean == copy_scaling.mean, boost::test_tools::per_element());
      BOOST_TEST(mapped_scaling.inv_std == copy_scaling.inv_std, boost::test_tools::per_element());
      BOOST_TEST(Gather(d, mapped_scaling) == Gather(copy, copy_scaling),
                 boost::test_tools::per_element());
      const std::vector<std::uint32_t> reversed = {1, 0};
      std::vector<float> x_reversed(kRows * kFeatures), y(kRows);
      GatherBatch(d, ConstantScaling(1.0f), reversed, x_reversed.data(), y.data());
      std::vector<float> expected_reversed(expected.begin() + kFeatures, expected.end());
      expected_reversed.insert(expected_reversed.end(), expected.begin(),
                               expected.begin() + kFeatures);
      BOOST_TEST(x_reversed == expected_reversed, boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(a_validation_split_of_a_mapped_set_holds_the_same_rows_as_a_copys) {
  TempDir dir;
  std::vector<float> values(40 * 3);
  std::iota(values.begin(), values.end(), 0.0f);
  const std::string x = dir.Write("x.npy", NpyBytes(NpyDict("<f4", "(40, 3)"), ValueBytes(values)));
  const Result<Dataset> r = ReadNpy(x, "", NpyOptions{});
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  auto [train, validation] = SplitValidation(r.value(), 0.25, 7);
  auto [copy_train, copy_validation] = SplitValidation(FloatCopy(values, 3), 0.25, 7);
  BOOST_TEST(train.rows == 30u);
  BOOST_TEST(validation.rows == 10u);
  BOOST_TEST(train.mapped != nullptr);
  BOOST_TEST(validation.mapped != nullptr);
  BOOST_TEST(Gather(train, ConstantScaling(1.0f)) == Gather(copy_train, ConstantScaling(1.0f)),
             boost::test_tools::per_element());
  BOOST_TEST(
      Gather(validation, ConstantScaling(1.0f)) == Gather(copy_validation, ConstantScaling(1.0f)),
      boost::test_tools::per_element());
  // Split again (a split of a split composes the row lists).
  auto [inner, held] = SplitValidation(std::move(train), 0.5, 3);
  auto [copy_inner, copy_held] = SplitValidation(std::move(copy_train), 0.5, 3);
  BOOST_TEST(Gather(held, ConstantScaling(1.0f)) == Gather(copy_held, ConstantScaling(1.0f)),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(labels_of_every_integer_dtype_and_the_label_rule) {
  TempDir dir;
  const std::string x = dir.Write("x.npy", NpyBytes(NpyDict("<f4", "(4, 3)"), ValueBytes(kValues)));
  const std::vector<std::pair<std::string, std::string>> labels = {
      {"|i1", ValueBytes<std::int8_t>({1, 0, 1, 3})},
      {"<i2", ValueBytes<std::int16_t>({1, 0, 1, 3})},
      {"<i4", ValueBytes<std::int32_t>({1, 0, 1, 3})},
      {"<u2", ValueBytes<std::uint16_t>({1, 0, 1, 3})},
      {"<u4", ValueBytes<std::uint32_t>({1, 0, 1, 3})},
      {"<u8", ValueBytes<std::uint64_t>({1, 0, 1, 3})},
      {"<f8", ValueBytes<double>({1, 0, 1, 3})}};
  for (const auto& [descr, bytes] : labels) {
    const std::string y = dir.Write("y.npy", NpyBytes(NpyDict(descr, "(4,)"), bytes));
    const Result<Dataset> r = Read(x, y);
    BOOST_TEST_REQUIRE(r.ok(), descr << ": " << r.status().message());
    BOOST_TEST(r.value().labels == (std::vector<float>{1, 0, 1, 3}),
               boost::test_tools::per_element());
    BOOST_TEST(r.value().num_classes == 4);
  }
  // -1/+1 labels map to 0/1, as in libsvm files.
  const std::string pm = dir.Write(
      "pm.npy", NpyBytes(NpyDict("<i8", "(4,)"), ValueBytes<std::int64_t>({-1, 1, 1, -1})));
  const Result<Dataset> r = Read(x, pm);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST(r.value().labels == (std::vector<float>{0, 1, 1, 0}),
             boost::test_tools::per_element());
  const std::string negative = dir.Write(
      "neg.npy", NpyBytes(NpyDict("<i8", "(4,)"), ValueBytes<std::int64_t>({0, -2, 1, 1})));
  CheckReadRefused(Read(x, negative), negative, "label 1 (0-based): class label is negative");
  const std::string fraction =
      dir.Write("frac.npy", NpyBytes(NpyDict("<f4", "(4,)"), ValueBytes<float>({0, 0.5f, 1, 1})));
  CheckReadRefused(Read(x, fraction), fraction, "label 1 (0-based): class label is not an integer");
  const std::string nan = dir.Write(
      "nan.npy", NpyBytes(NpyDict("<f4", "(4,)"),
                          ValueBytes<float>({0, 1, std::numeric_limits<float>::quiet_NaN(), 1})));
  CheckReadRefused(Read(x, nan), nan, "label 2 (0-based) is not a finite number");
}

BOOST_AUTO_TEST_CASE(refuses_bad_files_naming_the_file_and_the_problem) {
  TempDir dir;
  const std::string data = ValueBytes(kValues);
  const std::string x = dir.Write("x.npy", NpyBytes(NpyDict("<f4", "(4, 3)"), data));
  const std::string y3 =
      dir.Write("y3.npy", NpyBytes(NpyDict("<i8", "(3,)"), ValueBytes<std::int64_t>({0, 1, 0})));
  CheckReadRefused(Read(x, y3), y3, "holds 3 labels but " + x + " holds 4 rows");
  const std::string y2d = dir.Write(
      "y2d.npy", NpyBytes(NpyDict("<i8", "(2, 2)"), ValueBytes<std::int64_t>({0, 1, 0, 1})));
  CheckReadRefused(Read(x, y2d), y2d, "labels of shape (2, 2) are not read");
  const std::string cut = dir.Write("cut.npy", NpyBytes(NpyDict("<f4", "(4, 3)"), data.substr(1)));
  CheckReadRefused(Read(cut, ""), cut,
                   "truncated: the header declares 48 bytes of data, 47 present");
  const std::string longer = dir.Write("long.npy", NpyBytes(NpyDict("<f4", "(4, 3)"), data + "!"));
  CheckReadRefused(Read(longer, ""), longer, "unexpected data after the array");
  const std::string ints = dir.Write("ints.npy", NpyBytes(NpyDict("<i4", "(4, 3)"), data));
  CheckReadRefused(Read(ints, ""), ints, "features of dtype int32 are not read");
  const std::string flat = dir.Write("flat.npy", NpyBytes(NpyDict("<f4", "(12,)"), data));
  CheckReadRefused(Read(flat, ""), flat, "features of shape (12,) are not read");
  const std::string five = dir.Write("five.npy", NpyBytes(NpyDict("<f4", "(1, 1, 3, 2, 2)"), data));
  CheckReadRefused(Read(five, ""), five,
                   "features of shape (1, 1, 3, 2, 2) are not read: they must be rows x features, "
                   "rows x height x width or rows x channels x height x width");
  const std::string empty = dir.Write("empty.npy", NpyBytes(NpyDict("<f4", "(0, 3)"), ""));
  CheckReadRefused(Read(empty, ""), empty, "holds no rows or no features");
  const std::string big = dir.Write("big.npy", NpyBytes(NpyDict(">f4", "(4, 3)"), data));
  CheckReadRefused(Read(big, ""), big, "big-endian");
  CheckReadRefused(Read(dir.Path("absent.npy"), ""), dir.Path("absent.npy"), "No such file");

  const std::string x_npy = NpyBytes(NpyDict("<f4", "(4, 3)"), data);
  const std::string npz = dir.Write("x.npz", NpzBytes({{"x", x_npy}}));
  CheckReadRefused(Read(npz, ""), npz, "has no array 'y' (no member y.npy)");
  NpyOptions unlabelled;
  unlabelled.labels = false;
  const Result<Dataset> features_only = ReadNpy(npz, "", unlabelled);
  BOOST_TEST_REQUIRE(features_only.ok(), features_only.status().message());
  BOOST_TEST(features_only.value().num_classes == 0);
  const std::string packed = dir.Write("packed.npz", NpzBytes({{"x", x_npy}}, true));
  CheckReadRefused(Read(packed, ""), packed, "is compressed (numpy.savez_compressed)");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace npy_reader_test
}  // namespace dtrain::data
