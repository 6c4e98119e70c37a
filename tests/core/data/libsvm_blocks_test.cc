// A libsvm file cut into blocks (data.stream): the blocks together read back exactly the rows
// the whole file reads as (labels mapped and features counted over the whole file), a bad line
// is found when the file is indexed and named by its line in the file, and a file that changed
// since it was indexed is an error, not other rows.
#include "core/data/libsvm_blocks.h"

#include <boost/test/unit_test.hpp>
#include <string>

#include "common/temp_dir.h"

namespace dtrain::data {
namespace libsvm_blocks_test {

using testing::TempDir;

// 40 rows with -1/+1 labels, unsorted and repeated features, comments and blank lines.
std::string Rows() {
  std::string text = "# clicks\n";
  for (int r = 0; r < 40; ++r) {
    const std::string shared = std::to_string(r % 4 + 1);
    text.append(r % 3 == 0 ? "+1 " : "-1 ").append(std::to_string(r + 5)).append(":1 ");
    text.append(shared).append(":0.5 ").append(shared).append(":0.25\n");
    if (r % 7 == 0) text += "\n# a comment line\n";
  }
  return text;
}

BOOST_AUTO_TEST_SUITE(libsvm_blocks)

BOOST_AUTO_TEST_CASE(the_blocks_together_are_the_whole_file) {
  TempDir dir;
  const std::string path = dir.Write("rows.svm", Rows());
  const Result<SparseRows> whole = ReadLibsvmSparse(path, {});
  BOOST_REQUIRE(whole.ok());
  const Result<LibsvmBlockIndex> index = IndexLibsvmBlocks(path, {}, 100);
  BOOST_REQUIRE_MESSAGE(index.ok(), index.status().message());
  BOOST_TEST(index.value().blocks.size() > 5u);
  BOOST_TEST(index.value().rows == whole.value().rows());
  BOOST_TEST(index.value().features == whole.value().features);  // 44: the largest index
  BOOST_TEST(index.value().num_classes == 2);
  BOOST_TEST(index.value().maps_plus_minus_one);
  SparseRows joined;
  for (std::size_t b = 0; b < index.value().blocks.size(); ++b) {
    const Result<SparseRows> block = ReadLibsvmBlock(index.value(), b);
    BOOST_REQUIRE_MESSAGE(block.ok(), block.status().message());
    BOOST_TEST(block.value().rows() == index.value().blocks[b].rows);
    BOOST_TEST(block.value().features == whole.value().features);
    for (std::size_t r = 0; r < block.value().rows(); ++r) {
      joined.labels.push_back(block.value().labels[r]);
      const auto idx = block.value().Index(r);
      const auto val = block.value().Value(r);
      joined.index.insert(joined.index.end(), idx.begin(), idx.end());
      joined.value.insert(joined.value.end(), val.begin(), val.end());
      joined.row_start.push_back(joined.index.size());
    }
  }
  BOOST_TEST(joined.labels == whole.value().labels);  // 0/1, mapped as the whole file's
  BOOST_TEST(joined.index == whole.value().index);
  BOOST_TEST(joined.value == whole.value().value);  // repeated features summed
  BOOST_TEST(joined.row_start == whole.value().row_start);
}

BOOST_AUTO_TEST_CASE(a_bad_line_is_found_when_indexing_by_its_line_in_the_file) {
  TempDir dir;
  const std::string path = dir.Write("rows.svm", Rows() + "1 3:1 x:2\n");
  const Result<SparseRows> whole = ReadLibsvmSparse(path, {});
  const Result<LibsvmBlockIndex> index = IndexLibsvmBlocks(path, {}, 64);
  BOOST_REQUIRE(!whole.ok());
  BOOST_REQUIRE(!index.ok());
  BOOST_TEST(index.status().message() == whole.status().message());
  BOOST_TEST(index.status().message().find("line 54, column 7") != std::string::npos,
             index.status().message());
}

BOOST_AUTO_TEST_CASE(a_file_changed_since_it_was_indexed_is_an_error) {
  TempDir dir;
  const std::string path = dir.Write("rows.svm", Rows());
  const Result<LibsvmBlockIndex> index = IndexLibsvmBlocks(path, {}, 100);
  BOOST_REQUIRE(index.ok());
  std::string changed = Rows();
  changed[changed.find("\n+1 8") + 1] = '#';  // a row becomes a comment, same bytes
  dir.Write("rows.svm", changed);
  int refused = 0;
  for (std::size_t b = 0; b < index.value().blocks.size(); ++b) {
    const Result<SparseRows> block = ReadLibsvmBlock(index.value(), b);
    if (!block.ok()) {
      ++refused;
      BOOST_TEST(block.status().message().find("when the file was indexed") != std::string::npos,
                 block.status().message());
    }
  }
  BOOST_TEST(refused == 1);  // the block that held the row
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace libsvm_blocks_test
}  // namespace dtrain::data
