#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "common/temp_dir.h"
#include "core/data/readers.h"
#include "core/data/sparse_rows.h"

namespace dtrain::data {
namespace text_readers_test {

using dtrain::testing::TempDir;

std::vector<float> Features(const Dataset& d) { return {d.floats.begin(), d.floats.end()}; }

// The read fails and its message names `path` and contains every fragment.
void CheckError(const Result<Dataset>& r, const std::string& path,
                const std::vector<std::string>& fragments) {
  BOOST_TEST_REQUIRE(!r.ok());
  const std::string m = r.status().message();
  BOOST_TEST(m.find(path) != std::string::npos, m);
  for (const std::string& f : fragments) BOOST_TEST(m.find(f) != std::string::npos, m);
}

BOOST_AUTO_TEST_SUITE(csv_reader)

// Rows to predict: every column a feature, every label 0; the header's names, for the client.
BOOST_AUTO_TEST_CASE(without_labels_every_column_is_a_feature) {
  TempDir dir;
  const std::string path = dir.Write("a.csv", " x1 ,\"x 2\"\n1.5,2\n\n7,8\n");
  CsvOptions o;
  o.labels = false;
  const Result<Dataset> d = ReadCsv(path, o);
  BOOST_TEST_REQUIRE(d.ok(), d.status().message());
  BOOST_TEST(d.value().rows == 2u);
  BOOST_TEST(d.value().features == 2u);
  BOOST_TEST(Features(d.value()) == (std::vector<float>{1.5f, 2, 7, 8}),
             boost::test_tools::per_element());
  BOOST_TEST(d.value().labels == (std::vector<float>{0, 0}), boost::test_tools::per_element());
  const Result<std::vector<std::string>> names = ReadCsvFirstLine(path, ',');
  BOOST_TEST_REQUIRE(names.ok());
  BOOST_TEST(names.value() == (std::vector<std::string>{"x1", "x 2"}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(label_column_by_name_is_removed_from_the_features) {
  TempDir dir;
  const std::string path = dir.Write("a.csv", "x1,class,x2\n1.5,2,-3\n0,0,4e2\n7,1,8\n");
  CsvOptions o;
  o.label_column = "class";
  const Result<Dataset> r = ReadCsv(path, o);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  const Dataset& d = r.value();
  BOOST_TEST(d.rows == 3u);
  BOOST_TEST(d.features == 2u);
  BOOST_TEST(!d.stored_as_bytes());
  BOOST_TEST(Features(d) == (std::vector<float>{1.5f, -3, 0, 400, 7, 8}),
             boost::test_tools::per_element());
  BOOST_TEST(d.labels == (std::vector<float>{2, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(d.num_classes == 3);
  BOOST_TEST(d.source == path);
}

BOOST_AUTO_TEST_CASE(label_by_index_without_header_and_last_column_by_default) {
  TempDir dir;
  const std::string path = dir.Write("b.csv", "1,10,20\n0,30,40\n");
  CsvOptions o;
  o.header = false;
  o.label_index = 0;
  Result<Dataset> r = ReadCsv(path, o);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST(Features(r.value()) == (std::vector<float>{10, 20, 30, 40}),
             boost::test_tools::per_element());
  BOOST_TEST(r.value().labels == (std::vector<float>{1, 0}), boost::test_tools::per_element());

  o.label_index = -1;  // last column
  o.classification = false;
  r = ReadCsv(path, o);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST(Features(r.value()) == (std::vector<float>{1, 10, 0, 30}),
             boost::test_tools::per_element());
  BOOST_TEST(r.value().labels == (std::vector<float>{20, 40}), boost::test_tools::per_element());
  BOOST_TEST(r.value().num_classes == 0);
}

BOOST_AUTO_TEST_CASE(tolerates_crlf_blank_lines_padding_quotes_and_other_delimiters) {
  TempDir dir;
  const std::string path =
      dir.Write("c.csv", "\"a\"; \"b\" ;label\r\n\r\n 1 ; +2;\"1\"\r\n  \n3;4.25;0\r\n");
  CsvOptions o;
  o.delimiter = ';';
  o.label_column = "label";
  const Result<Dataset> r = ReadCsv(path, o);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST(r.value().rows == 2u);
  BOOST_TEST(Features(r.value()) == (std::vector<float>{1, 2, 3, 4.25f}),
             boost::test_tools::per_element());
  BOOST_TEST(r.value().labels == (std::vector<float>{1, 0}), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(regression_labels_keep_their_values) {
  TempDir dir;
  const std::string path = dir.Write("r.csv", "x,y\n1,-0.5\n2,3.75\n");
  CsvOptions o;
  o.classification = false;
  const Result<Dataset> r = ReadCsv(path, o);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST(r.value().labels == (std::vector<float>{-0.5f, 3.75f}),
             boost::test_tools::per_element());
  BOOST_TEST(r.value().num_classes == 0);
}

BOOST_AUTO_TEST_CASE(plus_minus_one_labels_become_zero_and_one) {
  TempDir dir;
  const Result<Dataset> r = ReadCsv(dir.Write("pm.csv", "x,y\n1,-1\n2,1\n3,-1\n"), {});
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST(r.value().labels == (std::vector<float>{0, 1, 0}), boost::test_tools::per_element());
  BOOST_TEST(r.value().num_classes == 2);
}

BOOST_AUTO_TEST_CASE(bad_class_labels_name_the_line) {
  TempDir dir;
  const std::string negative = dir.Write("neg.csv", "x,y\n1,0\n2,-2\n3,1\n");
  CheckError(ReadCsv(negative, {}), negative, {"line 3, column 2", "class label is negative"});
  const std::string fraction = dir.Write("frac.csv", "x,y\n1,0\n2,1.5\n");
  CheckError(ReadCsv(fraction, {}), fraction, {"line 3, column 2:", "not an integer"});
}

BOOST_AUTO_TEST_CASE(non_numeric_cell_names_line_and_column) {
  TempDir dir;
  const std::string path = dir.Write("bad.csv", "a,b,label\n1,2,0\n3,abc,1\n");
  CheckError(ReadCsv(path, {}), path, {"line 3, column 2: not a number"});
  const std::string empty = dir.Write("empty-cell.csv", "a,b,label\n1,,0\n");
  CheckError(ReadCsv(empty, {}), empty, {"line 2, column 2", "missing number"});
  const std::string inf = dir.Write("inf.csv", "a,b,label\n1,inf,0\n");
  CheckError(ReadCsv(inf, {}), inf, {"line 2, column 2", "not a finite number"});
}

BOOST_AUTO_TEST_CASE(short_and_long_rows_name_the_line) {
  TempDir dir;
  const std::string short_row = dir.Write("short.csv", "a,b,label\n1,2,0\n3,4,1\n5,1\n");
  CheckError(ReadCsv(short_row, {}), short_row, {"line 4", "expected 3 columns, found 2"});
  const std::string long_row = dir.Write("long.csv", "a,b,label\n1,2,0,9\n");
  CheckError(ReadCsv(long_row, {}), long_row, {"line 2", "expected 3 columns, found 4"});
}

BOOST_AUTO_TEST_CASE(label_column_problems_are_reported) {
  TempDir dir;
  const std::string path = dir.Write("h.csv", "a,b,label\n1,2,0\n");
  CsvOptions o;
  o.label_column = "target";
  CheckError(ReadCsv(path, o), path, {"no column named 'target'", "names 3 columns"});
  o.header = false;
  CheckError(ReadCsv(path, o), path, {"needs a header"});
  o = {};
  o.label_index = 3;
  CheckError(ReadCsv(path, o), path, {"label index 3 is out of range"});
}

BOOST_AUTO_TEST_CASE(missing_or_empty_file_is_an_error) {
  TempDir dir;
  const std::string missing = dir.Path("missing.csv");
  CheckError(ReadCsv(missing, {}), missing, {"cannot open", "No such file"});
  const std::string header_only = dir.Write("header.csv", "a,b\n");
  CheckError(ReadCsv(header_only, {}), header_only, {"no data rows"});
  const std::string empty = dir.Write("empty.csv", "");
  CheckError(ReadCsv(empty, {}), empty, {"no header line"});
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(libsvm_reader)

BOOST_AUTO_TEST_CASE(parses_and_densifies) {
  TempDir dir;
  const std::string path = dir.Write("a.svm",
                                     "# a comment line\n"
                                     "+1 1:0.5 4:-2\n"
                                     "\n"
                                     "-1 2:3 # trailing comment\n"
                                     "1\t3:1e-1  1:7\n");
  const Result<Dataset> r = ReadLibsvm(path, 4);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  const Dataset& d = r.value();
  BOOST_TEST(d.rows == 3u);
  BOOST_TEST(d.features == 4u);
  BOOST_TEST(Features(d) == (std::vector<float>{0.5f, 0, 0, -2, 0, 3, 0, 0, 7, 0, 0.1f, 0}),
             boost::test_tools::per_element());
  BOOST_TEST(d.labels == (std::vector<float>{1, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(d.num_classes == 2);
  BOOST_TEST(d.source == path);
}

BOOST_AUTO_TEST_CASE(multiclass_and_regression_labels) {
  TempDir dir;
  const std::string path = dir.Write("m.svm", "2 1:1\n0 2:1\n1 1:1\n");
  Result<Dataset> r = ReadLibsvm(path, 2);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST(r.value().labels == (std::vector<float>{2, 0, 1}), boost::test_tools::per_element());
  BOOST_TEST(r.value().num_classes == 3);

  const std::string reg = dir.Write("r.svm", "-1.5 1:1\n2.25 2:1\n");
  r = ReadLibsvm(reg, 2, /*classification=*/false);
  BOOST_TEST_REQUIRE(r.ok(), r.status().message());
  BOOST_TEST(r.value().labels == (std::vector<float>{-1.5f, 2.25f}),
             boost::test_tools::per_element());
  BOOST_TEST(r.value().num_classes == 0);
  CheckError(ReadLibsvm(reg, 2), reg, {"line 1", "not an integer"});
}

BOOST_AUTO_TEST_CASE(index_out_of_range_names_the_line) {
  TempDir dir;
  const std::string beyond = dir.Write("beyond.svm", "1 1:1\n0 2:1 5:1\n");
  CheckError(ReadLibsvm(beyond, 4), beyond, {"line 2, column 7", "feature index is out of range 1..4"});
  const std::string zero = dir.Write("zero.svm", "1 0:1\n");
  CheckError(ReadLibsvm(zero, 4), zero, {"line 1, column 3", "feature index is out of range"});
  const std::string huge = dir.Write("huge.svm", "1 99999999999999999999999:1\n");
  CheckError(ReadLibsvm(huge, 4), huge, {"line 1", "out of range"});
}

BOOST_AUTO_TEST_CASE(malformed_tokens_name_the_line) {
  TempDir dir;
  const std::string pair = dir.Write("pair.svm", "1 1:1\n1 2\n");
  CheckError(ReadLibsvm(pair, 4), pair, {"line 2, column 3: not an index:value pair"});
  const std::string value = dir.Write("value.svm", "1 1:x\n");
  CheckError(ReadLibsvm(value, 4), value, {"line 1, column 3: feature value: not a number"});
  const std::string index = dir.Write("index.svm", "1 a:1\n");
  CheckError(ReadLibsvm(index, 4), index, {"line 1, column 3", "feature index is not a non-negative integer"});
  const std::string label = dir.Write("label.svm", "1 1:1\nfoo 1:1\n");
  CheckError(ReadLibsvm(label, 4), label, {"line 2, column 1: bad label: not a number"});
  // Multilabel rows are named as such, in the dense and the sparse reader alike.
  const std::string multi = dir.Write("multi.svm", "1 1:1\n1,0 2:2.5\n");
  CheckError(ReadLibsvm(multi, 4), multi,
             {"line 2, column 1: multilabel rows (labels joined by commas) are not supported"});
  const Result<SparseRows> sparse = ReadLibsvmSparse(multi, {});
  BOOST_REQUIRE(!sparse.ok());
  BOOST_TEST(sparse.status().message() ==
                 multi + ": line 2, column 1: multilabel rows (labels joined by commas) are not "
                         "supported: give each row one label",
             sparse.status().message());
}

BOOST_AUTO_TEST_CASE(missing_empty_file_and_zero_features_are_errors) {
  TempDir dir;
  const std::string missing = dir.Path("missing.svm");
  CheckError(ReadLibsvm(missing, 4), missing, {"cannot open"});
  const std::string empty = dir.Write("empty.svm", "# nothing\n\n");
  CheckError(ReadLibsvm(empty, 4), empty, {"no data rows"});
  CheckError(ReadLibsvm(dir.Write("ok.svm", "1 1:1\n"), 0), dir.Path("ok.svm"),
             {"invalid feature count 0"});
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace text_readers_test
}  // namespace dtrain::data
