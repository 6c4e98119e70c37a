#include "cmd/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cmd/terminal.h"

namespace dtrain::cli {
namespace {

// A grid of dots, 2 x 4 per character cell.
class Canvas {
 public:
  static constexpr int kDotsX = 2;
  static constexpr int kDotsY = 4;

  Canvas(int width, int height)
      : width_(width), height_(height), cells_(static_cast<std::size_t>(width * height), 0) {}

  int DotsWide() const { return width_ * kDotsX; }
  int DotsHigh() const { return height_ * kDotsY; }

  // (x, y) in dots, y = 0 at the top.
  void Set(int x, int y) {
    if (x < 0 || y < 0 || x >= DotsWide() || y >= DotsHigh()) return;
    // Braille dot numbering: 1-3 and 7 down the left column, 4-6 and 8 down the right.
    static constexpr std::uint8_t kBits[kDotsY][kDotsX] = {
        {0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};
    cells_[static_cast<std::size_t>((y / kDotsY) * width_ + x / kDotsX)] |=
        kBits[y % kDotsY][x % kDotsX];
  }

  void Line(int x0, int y0, int x1, int y1) {  // Bresenham
    const int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    const int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    for (int err = dx + dy;;) {
      Set(x0, y0);
      if (x0 == x1 && y0 == y1) return;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }

  // One row of cells as braille characters (UTF-8) or '*' for a cell with any dot.
  std::string Row(int row, bool braille) const {
    std::string out;
    for (int c = 0; c < width_; ++c) {
      const std::uint8_t bits = cells_[static_cast<std::size_t>(row * width_ + c)];
      if (!braille) {
        out += bits != 0 ? '*' : ' ';
      } else if (bits == 0) {
        out += ' ';
      } else {
        // U+2800 + bits: E2, A0 | bits >> 6, 80 | bits & 3F.
        out += static_cast<char>(0xE2);
        out += static_cast<char>(0xA0 | (bits >> 6));
        out += static_cast<char>(0x80 | (bits & 0x3F));
      }
    }
    return out;
  }

 private:
  int width_, height_;
  std::vector<std::uint8_t> cells_;
};

std::string Number(double value) {
  char out[32];
  std::snprintf(out, sizeof out, "%.6g", value);
  return out;
}

// Maps [lo, hi] onto [0, dots - 1]; a single value lands in the middle.
int Scale(double value, double lo, double hi, int dots) {
  if (hi <= lo) return (dots - 1) / 2;
  return static_cast<int>(std::lround((value - lo) / (hi - lo) * (dots - 1)));
}

}  // namespace

bool TerminalIsUtf8() {
  for (const char* name : {"LC_ALL", "LC_CTYPE", "LANG"}) {
    const char* value = std::getenv(name);
    if (value == nullptr || value[0] == '\0') continue;
    const std::string locale(value);
    return locale.find("UTF-8") != std::string::npos || locale.find("utf8") != std::string::npos ||
           locale.find("utf-8") != std::string::npos || locale.find("UTF8") != std::string::npos;
  }
  return false;
}

void PrintPlot(const PlotSeries& series, const PlotStyle& style, std::ostream& out) {
  std::vector<std::pair<double, double>> points;
  for (const auto& p : series.points) {
    if (std::isfinite(p.first) && std::isfinite(p.second)) points.push_back(p);
  }
  out << series.title << ": " << points.size() << (points.size() == 1 ? " point" : " points");
  if (points.empty()) {
    out << '\n';
    return;
  }
  const auto [x_lo, x_hi] = std::minmax_element(
      points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto [y_lo, y_hi] =
      std::minmax_element(points.begin(), points.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; });
  const double x_min = x_lo->first, x_max = x_hi->first;
  const double y_min = y_lo->second, y_max = y_hi->second;
  out << ", steps " << Number(x_min) << ".." << Number(x_max) << '\n';

  Canvas canvas(std::max(style.width, 2), std::max(style.height, 2));
  const auto dot = [&](const std::pair<double, double>& p) {
    return std::pair{Scale(p.first, x_min, x_max, canvas.DotsWide()),
                     canvas.DotsHigh() - 1 - Scale(p.second, y_min, y_max, canvas.DotsHigh())};
  };
  auto previous = dot(points.front());
  canvas.Set(previous.first, previous.second);
  for (std::size_t i = 1; i < points.size(); ++i) {
    const auto next = dot(points[i]);
    canvas.Line(previous.first, previous.second, next.first, next.second);
    previous = next;
  }

  const std::string top = Number(y_max), bottom = Number(y_min);
  const std::size_t label = std::max(top.size(), bottom.size());
  const int rows = std::max(style.height, 2);
  for (int r = 0; r < rows; ++r) {
    std::string text = r == 0 ? top : r == rows - 1 ? bottom : "";
    text.insert(0, label - text.size(), ' ');
    out << "  " << text << " |" << Paint(style.color, kCyan, canvas.Row(r, style.braille)) << '\n';
  }
  const int cols = std::max(style.width, 2);
  out << "  " << std::string(label, ' ') << " +" << std::string(static_cast<std::size_t>(cols), '-')
      << '\n';
  const std::string left = Number(x_min), right = Number(x_max);
  const std::size_t gap = static_cast<std::size_t>(cols) > left.size() + right.size()
                              ? static_cast<std::size_t>(cols) - left.size() - right.size()
                              : 1;
  out << "  " << std::string(label, ' ') << "  " << left << std::string(gap, ' ') << right << '\n';
}

}  // namespace dtrain::cli
