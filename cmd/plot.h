// A metric over training steps as a character plot in the terminal (`dtrain metrics --plot`),
// or several overlaid on one plot (`dtrain compare --plot`): a width x height grid of braille
// cells (2 x 4 dots each) on a UTF-8 terminal, else of '*', with the value range on the left and
// the step range below.
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
// Overlaid series must be told apart: each is drawn in its own colour (kSeriesColors, in turn)
// and a legend line names it, when colour is on and the terminal is UTF-8; otherwise each is
// drawn with its own character (kSeriesMarkers, in turn), which its legend line shows. Where
// series cross, a cell shows the later one.
//
// Pure functions plus printing: one thread at a time per stream.
#pragma once

#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cmd/terminal.h"

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

inline constexpr std::string_view kSeriesMarkers = "*+ox#@%&";
inline constexpr std::string_view kSeriesColors[] = {kCyan, kYellow, kMagenta, kGreen, kBlue, kRed};

// Consecutive points are joined by straight lines; non-finite values are left out.
void PrintPlot(const PlotSeries& series, const PlotStyle& style, std::ostream& out);

// Every series on one plot, over the range of all of them: "TITLE: N series, steps A..B", a
// legend line per series ("  * job 12 (lr-small): 40 points"), then the plot.
void PrintPlots(std::string_view title, std::span<const PlotSeries> series, const PlotStyle& style,
                std::ostream& out);

}  // namespace dtrain::cli
