// The terminal plot (cmd/plot.h): one series as `metrics --plot` draws it, and several overlaid
// on one plot, each named by a legend line and told apart by a marker of its own without colour
// (even on a UTF-8 terminal) or by its colour with braille dots.
#include "cmd/plot.h"

#include <boost/test/unit_test.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace dtrain::cli {
namespace plot_test {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

BOOST_AUTO_TEST_SUITE(plot)

BOOST_AUTO_TEST_CASE(overlaid_series_have_a_legend_line_and_a_marker_each) {
  const std::vector<PlotSeries> series = {{"job 1 (a)", {{0, 0.0}, {10, 1.0}}},
                                          {"job 2 (b)", {{0, 1.0}, {10, 0.0}}},
                                          {"job 3 (c)", {}}};
  std::ostringstream out;
  PrintPlots("eval_loss", series, PlotStyle{20, 6, true, false}, out);
  const std::vector<std::string> lines = Lines(out.str());
  BOOST_REQUIRE(lines.size() == 1u + 3u + 6u + 2u);
  BOOST_TEST(lines[0] == "eval_loss: 3 series, steps 0..10");
  BOOST_TEST(lines[1] == "  * job 1 (a): 2 points");
  BOOST_TEST(lines[2] == "  + job 2 (b): 2 points");
  BOOST_TEST(lines[3] == "  o job 3 (c): 0 points");
  // Without colour even a UTF-8 terminal gets markers: the rising line ends top right, the
  // falling one top left, and no braille anywhere.
  const std::string top = lines[4].substr(lines[4].find('|') + 1);
  BOOST_TEST(top.front() == '+', lines[4]);
  BOOST_TEST(top.back() == '*', lines[4]);
  BOOST_TEST(!Contains(out.str(), "\xE2"));
  // With colour on a UTF-8 terminal: braille dots in each series' colour.
  std::ostringstream colored;
  PrintPlots("eval_loss", series, PlotStyle{20, 6, true, true}, colored);
  BOOST_TEST(Contains(colored.str(), "\x1b[36m\xE2"));
  BOOST_TEST(Contains(colored.str(), "\x1b[33m\xE2"));
}

BOOST_AUTO_TEST_CASE(one_series_is_titled_with_its_points_and_steps) {
  std::ostringstream out;
  PrintPlot({"train_loss", {{1, 2.0}, {100, 0.5}}}, PlotStyle{10, 3, false, false}, out);
  const std::vector<std::string> lines = Lines(out.str());
  BOOST_REQUIRE(lines.size() == 6u);
  BOOST_TEST(lines[0] == "train_loss: 2 points, steps 1..100");
  BOOST_TEST(lines[1].find("    2 |*") == 0u, lines[1]);
  BOOST_TEST(lines[5].ends_with("100"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace plot_test
}  // namespace dtrain::cli
