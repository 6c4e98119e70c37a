#include "config/suggest.h"

#include <boost/test/unit_test.hpp>
#include <limits>
#include <string_view>
#include <vector>

#include "config/toml_text.h"

namespace dtrain::config {
namespace suggest_test {

const std::vector<std::string_view> kTrainKeys = {"epochs",  "steps",      "batch_size", "seed",
                                                  "threads", "eval_every", "log_every"};

BOOST_AUTO_TEST_SUITE(suggest)

BOOST_AUTO_TEST_CASE(edit_distance_counts_adjacent_swaps_as_one) {
  BOOST_TEST(EditDistance("kitten", "sitting") == 3u);
  BOOST_TEST(EditDistance("", "abc") == 3u);
  BOOST_TEST(EditDistance("ab", "ba") == 1u);
  BOOST_TEST(EditDistance("bacth_size", "batch_size") == 1u);
  BOOST_TEST(EditDistance("EPOCHS", "epochs") == 0u);
}

BOOST_AUTO_TEST_CASE(typos_find_their_key) {
  BOOST_TEST(ClosestName("batchsize", kTrainKeys) == "batch_size");
  BOOST_TEST(ClosestName("bacth_size", kTrainKeys) == "batch_size");
  BOOST_TEST(ClosestName("epoch", kTrainKeys) == "epochs");
  BOOST_TEST(ClosestName("Seed", kTrainKeys) == "seed");
  BOOST_TEST(ClosestName("log_evry", kTrainKeys) == "log_every");
}

BOOST_AUTO_TEST_CASE(unrelated_names_find_nothing) {
  BOOST_TEST(ClosestName("colour", kTrainKeys).empty());
  BOOST_TEST(ClosestName("learning_rate", kTrainKeys).empty());
  BOOST_TEST(ClosestName("x", kTrainKeys).empty());
  BOOST_TEST(ClosestName("", kTrainKeys).empty());
}

BOOST_AUTO_TEST_CASE(the_earlier_candidate_wins_a_tie) {
  const std::vector<std::string_view> names = {"abcd", "abce"};
  BOOST_TEST(ClosestName("abcx", names) == "abcd");
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(toml_text)

BOOST_AUTO_TEST_CASE(floats_are_shortest_and_always_floats) {
  BOOST_TEST(TomlFloat(0.01f) == "0.01");
  BOOST_TEST(TomlFloat(1.0f) == "1.0");
  BOOST_TEST(TomlFloat(255.0f) == "255.0");
  BOOST_TEST(TomlFloat(0.1) == "0.1");
  BOOST_TEST(TomlFloat(1e-8f) == "1e-08");
  BOOST_TEST(TomlFloat(-std::numeric_limits<double>::infinity()) == "-inf");
  BOOST_TEST(TomlFloat(std::numeric_limits<float>::quiet_NaN()) == "nan");
}

BOOST_AUTO_TEST_CASE(strings_escape_what_toml_requires) {
  BOOST_TEST(TomlString("plain") == "\"plain\"");
  BOOST_TEST(TomlString("a\"b\\c") == "\"a\\\"b\\\\c\"");
  BOOST_TEST(TomlString("\t\n") == "\"\\t\\n\"");
  BOOST_TEST(TomlString(std::string_view("\x01", 1)) == "\"\\u0001\"");
}

BOOST_AUTO_TEST_CASE(plain_numbers_drop_integral_fractions) {
  BOOST_TEST(PlainNumber(1e9) == "1000000000");
  BOOST_TEST(PlainNumber(0.9) == "0.9");
  BOOST_TEST(PlainNumber(-5.0) == "-5");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace suggest_test
}  // namespace dtrain::config
