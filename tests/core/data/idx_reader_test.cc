#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/idx_files.h"
#include "common/read_refusals.h"
#include "common/temp_dir.h"
#include "core/data/readers.h"

namespace dtrain::data {
namespace idx_reader_test {

using dtrain::testing::FashionMnistPresent;
using dtrain::testing::IdxBytes;
using dtrain::testing::kFashionDir;
using dtrain::testing::TempDir;
using testing::CheckReadRefused;

// Three 2x3 images with pixels 0..17 and labels 2, 0, 1.
const std::string kPixels = [] {
  std::string p;
  for (int i = 0; i < 18; ++i) p.push_back(static_cast<char>(i * 10));
  return p;
}();
const std::string kImages = IdxBytes(0x803, {3, 2, 3}, kPixels);
const std::string kLabels = IdxBytes(0x801, {3}, std::string("\x02\x00\x01", 3));

void CheckSmallSet(const Result<Dataset>& r, const std::string& images_path) {
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  const Dataset& d = r.value();
  BOOST_TEST(d.rows == 3u);
  BOOST_TEST(d.features == 6u);
  BOOST_TEST(d.stored_as_bytes());
  BOOST_TEST(d.floats.empty());
  BOOST_TEST(d.FeatureBytes() == 18u);
  BOOST_TEST(std::string(d.bytes.begin(), d.bytes.end()) == kPixels);
  BOOST_TEST(d.labels == (std::vector<float>{2, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(d.num_classes == 3);
  BOOST_TEST(d.source == images_path);
}

// The read fails and its message names `path` and contains `fragment`.
BOOST_AUTO_TEST_SUITE(idx_reader)

BOOST_AUTO_TEST_CASE(reads_plain_files) {
  TempDir dir;
  const std::string images = dir.Write("images", kImages);
  CheckSmallSet(ReadIdx(images, dir.Write("labels", kLabels)), images);
}

BOOST_AUTO_TEST_CASE(reads_images_without_labels_for_prediction) {
  TempDir dir;
  const Result<Dataset> r = ReadIdx(dir.Write("images", kImages), "");
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST(r.value().rows == 3u);
  BOOST_TEST(std::string(r.value().bytes.begin(), r.value().bytes.end()) == kPixels);
  BOOST_TEST(r.value().labels == (std::vector<float>{0, 0, 0}), boost::test_tools::per_element());
  BOOST_TEST(r.value().num_classes == 0);
}

BOOST_AUTO_TEST_CASE(reads_gzip_files_and_mixes_them_with_plain_ones) {
  TempDir dir;
  const std::string images = dir.WriteGz("images.gz", kImages);
  CheckSmallSet(ReadIdx(images, dir.WriteGz("labels.gz", kLabels)), images);
  CheckSmallSet(ReadIdx(images, dir.Write("labels", kLabels)), images);
}

BOOST_AUTO_TEST_CASE(truncated_images_name_the_incomplete_image) {
  TempDir dir;
  const std::string labels = dir.Write("labels", kLabels);
  const std::string cut = kImages.substr(0, kImages.size() - 4);  // image 2 loses 4 of 6 bytes
  const std::string plain = dir.Write("images", cut);
  CheckReadRefused(ReadIdx(plain, labels), plain, "truncated");
  CheckReadRefused(ReadIdx(plain, labels), plain, "in image 2 (0-based)");
  const std::string gz = dir.WriteGz("images.gz", cut);
  CheckReadRefused(ReadIdx(gz, labels), gz, "in image 2 (0-based)");
}

BOOST_AUTO_TEST_CASE(truncated_gzip_stream_is_an_error) {
  TempDir dir;
  const std::string whole = dir.WriteGz("whole.gz", kImages);
  std::string compressed;
  {
    std::ifstream in(whole, std::ios::binary);
    compressed.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string cut = dir.Write("cut.gz", compressed.substr(0, compressed.size() / 2));
  CheckReadRefused(ReadIdx(cut, dir.Write("labels", kLabels)), cut, "truncated");
}

BOOST_AUTO_TEST_CASE(truncated_header_and_empty_file_are_errors) {
  TempDir dir;
  const std::string labels = dir.Write("labels", kLabels);
  const std::string empty = dir.Write("empty", "");
  CheckReadRefused(ReadIdx(empty, labels), empty, "too short");
  const std::string header = dir.Write("header", kImages.substr(0, 10));
  CheckReadRefused(ReadIdx(header, labels), header, "truncated header");
}

BOOST_AUTO_TEST_CASE(wrong_magic_names_the_expected_number_only) {
  TempDir dir;
  const std::string images = dir.Write("images", kImages);
  const std::string labels = dir.Write("labels", kLabels);
  // Files swapped: the label file is read as images. What it holds is not quoted.
  CheckReadRefused(ReadIdx(labels, images), labels, "not an IDX image file: bad magic number");
  CheckReadRefused(ReadIdx(labels, images), labels, "expected 0x00000803");
  BOOST_TEST(ReadIdx(labels, images).status().message().find("0x00000801") == std::string::npos);
  CheckReadRefused(ReadIdx(images, images), images, "expected 0x00000801");
}

BOOST_AUTO_TEST_CASE(label_count_must_match_image_count) {
  TempDir dir;
  const std::string images = dir.Write("images", kImages);
  const std::string labels = dir.Write("labels", IdxBytes(0x801, {2}, std::string("\x01\x01")));
  CheckReadRefused(ReadIdx(images, labels), labels, "another number of labels than");
  CheckReadRefused(ReadIdx(images, labels), labels, "than " + images + " declares images");
}

BOOST_AUTO_TEST_CASE(data_after_the_declared_items_is_an_error) {
  TempDir dir;
  const std::string images = dir.Write("images", kImages + "x");
  CheckReadRefused(ReadIdx(images, dir.Write("labels", kLabels)), images, "unexpected data");
}

BOOST_AUTO_TEST_CASE(zero_images_or_empty_image_size_are_errors) {
  TempDir dir;
  const std::string labels = dir.Write("labels", IdxBytes(0x801, {0}, ""));
  const std::string none = dir.Write("none", IdxBytes(0x803, {0, 2, 2}, ""));
  CheckReadRefused(ReadIdx(none, labels), none, "no images");
  const std::string flat = dir.Write("flat", IdxBytes(0x803, {3, 0, 2}, ""));
  CheckReadRefused(ReadIdx(flat, dir.Write("labels3", kLabels)), flat, "invalid image size");
}

BOOST_AUTO_TEST_CASE(missing_file_names_the_file) {
  TempDir dir;
  const std::string missing = dir.Path("no-such-file.gz");
  const std::string labels = dir.Write("labels", kLabels);
  CheckReadRefused(ReadIdx(missing, labels), missing, "cannot open");
  const std::string images = dir.Write("images", kImages);
  CheckReadRefused(ReadIdx(images, missing), missing, "No such file");
}

BOOST_AUTO_TEST_CASE(reads_the_fashion_mnist_test_set,
                     *boost::unit_test::precondition(FashionMnistPresent)) {
  const Result<Dataset> r = ReadIdx(kFashionDir + "/t10k-images-idx3-ubyte.gz",
                                    kFashionDir + "/t10k-labels-idx1-ubyte.gz");
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  const Dataset& d = r.value();
  BOOST_TEST(d.rows == 10000u);
  BOOST_TEST(d.features == 784u);
  BOOST_TEST(d.stored_as_bytes());
  BOOST_TEST(d.FeatureBytes() == 10000u * 784u);  // one byte per pixel, no float copy
  BOOST_TEST(d.num_classes == 10);
  std::vector<int> per_class(10, 0);
  for (float label : d.labels) {
    BOOST_TEST_REQUIRE((label >= 0.0f && label <= 9.0f && label == static_cast<int>(label)));
    ++per_class[static_cast<int>(label)];
  }
  for (int n : per_class) BOOST_TEST(n == 1000);  // the test set is exactly balanced
  BOOST_TEST(d.labels[0] == 9.0f);                // the first item is an ankle boot
  const auto [lo, hi] = std::minmax_element(d.bytes.begin(), d.bytes.end());
  BOOST_TEST(*lo == 0);
  BOOST_TEST(*hi == 255);
}

// ReadIdxShape agrees with ReadIdx on every field the shape has.
void CheckShapeMatches(const std::string& images, const std::string& labels) {
  const Result<DatasetShape> shape = ReadIdxShape(images, labels);
  BOOST_TEST_REQUIRE(shape.ok(), shape.status().message());
  const Result<Dataset> whole = ReadIdx(images, labels);
  BOOST_TEST_REQUIRE(whole.ok(), whole.status().message());
  BOOST_TEST(shape.value().rows == whole.value().rows);
  BOOST_TEST(shape.value().features == whole.value().features);
  BOOST_TEST(shape.value().num_classes == whole.value().num_classes);
  BOOST_TEST(shape.value().source == whole.value().source);
}

// Both readers fail with the same message.
void CheckSameError(const std::string& images, const std::string& labels) {
  const Result<DatasetShape> shape = ReadIdxShape(images, labels);
  BOOST_TEST_REQUIRE(!shape.ok());
  const Result<Dataset> whole = ReadIdx(images, labels);
  BOOST_TEST_REQUIRE(!whole.ok());
  BOOST_TEST(shape.status().message() == whole.status().message());
}

BOOST_AUTO_TEST_CASE(shape_of_plain_and_gzip_files) {
  TempDir dir;
  const std::string images = dir.Write("images", kImages);
  const Result<DatasetShape> shape = ReadIdxShape(images, dir.Write("labels", kLabels));
  BOOST_TEST_REQUIRE(shape.ok(), shape.status().message());
  BOOST_TEST(shape.value().rows == 3u);
  BOOST_TEST(shape.value().features == 6u);
  BOOST_TEST(shape.value().num_classes == 3);
  BOOST_TEST(shape.value().source == images);
  CheckShapeMatches(images, dir.Path("labels"));
  CheckShapeMatches(dir.WriteGz("images.gz", kImages), dir.WriteGz("labels.gz", kLabels));
}

BOOST_AUTO_TEST_CASE(shape_does_not_read_the_pixels) {
  TempDir dir;
  const std::string header_only = dir.Write("images", kImages.substr(0, 16));
  const Result<DatasetShape> shape = ReadIdxShape(header_only, dir.Write("labels", kLabels));
  BOOST_TEST_REQUIRE(shape.ok(), shape.status().message());
  BOOST_TEST(shape.value().features == 6u);
}

BOOST_AUTO_TEST_CASE(shape_errors_are_read_idx_errors) {
  TempDir dir;
  const std::string images = dir.Write("images", kImages);
  const std::string labels = dir.Write("labels", kLabels);
  CheckSameError(labels, images);  // swapped
  CheckSameError(images, dir.Write("two", IdxBytes(0x801, {2}, "\x01\x01")));
  CheckSameError(images, dir.Write("short", IdxBytes(0x801, {3}, "\x01")));
  CheckSameError(dir.Write("none", IdxBytes(0x803, {0, 2, 2}, "")), labels);
  CheckSameError(dir.Write("flat", IdxBytes(0x803, {3, 0, 2}, "")), labels);
  CheckSameError(dir.Path("no-such-file"), labels);
  CheckSameError(images, dir.Path("no-such-file"));
}

BOOST_AUTO_TEST_CASE(shape_of_the_fashion_mnist_test_set,
                     *boost::unit_test::precondition(FashionMnistPresent)) {
  const std::string images = kFashionDir + "/t10k-images-idx3-ubyte.gz";
  const std::string labels = kFashionDir + "/t10k-labels-idx1-ubyte.gz";
  CheckShapeMatches(images, labels);
  const Result<DatasetShape> shape = ReadIdxShape(images, labels);
  BOOST_TEST_REQUIRE(shape.ok(), shape.status().message());
  BOOST_TEST(shape.value().rows == 10000u);
  BOOST_TEST(shape.value().features == 784u);
  BOOST_TEST(shape.value().num_classes == 10);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace idx_reader_test
}  // namespace dtrain::data
