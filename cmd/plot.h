// A metric over training steps as a character plot in the terminal (`dtrain metrics --plot`):
// a width x height grid of braille cells (2 x 4 dots each) on a UTF-8 terminal, else of '*',
// with the value range on the left and the step range below.
//
//   PlotSeries s{"train_loss", {{1, 2.3}, {50, 0.9}, {100, 0.4}}};
//   PrintPlot(s, PlotStyle{60, 15, TerminalIsUtf8(), ColorOnStdout()}, std::cout);
//
//   train_loss: 3 points, steps 1..100
//     2.3 |⠑⠢⢄
//         |   ⠈⠑⠒⠤⣀⡀
//     0.4 |        ⠈⠉⠉⠒⠒⠤⠤⣀⣀
//         +--------------------
//          1               100
//
// Pure functions plus printing: one thread at a time per stream.
#pragma once

#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace dtrain::cli {

struct PlotSeries {
  std::string title;
  std::vector<std::pair<double, double>> points;  // (step, value), by step
};

struct PlotStyle {
  int width = 60;   // cells
  int height = 15;  // cells
  bool braille = true;
  bool color = false;
};

// Whether LC_ALL, else LC_CTYPE, else LANG names a UTF-8 locale.
bool TerminalIsUtf8();

// Consecutive points are joined by straight lines; non-finite values are left out.
void PrintPlot(const PlotSeries& series, const PlotStyle& style, std::ostream& out);

}  // namespace dtrain::cli
