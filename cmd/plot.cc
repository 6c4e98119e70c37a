#include "cmd/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>

namespace dtrain::cli {
namespace {

using Points = std::vector<std::pair<double, double>>;

// A grid of dots, 2 x 4 per character cell; each cell remembers the series that drew in it last.
class Canvas {
 public:
  static constexpr int kDotsX = 2;
  static constexpr int kDotsY = 4;

  Canvas(int width, int height)
      : width_(width),
        height_(height),
        cells_(static_cast<std::size_t>(width * height), 0),
        series_(cells_.size(), 0) {}

  int DotsWide() const { return width_ * kDotsX; }
  int DotsHigh() const { return height_ * kDotsY; }

  // (x, y) in dots, y = 0 at the top.
  void Set(int x, int y, std::size_t series) {
    if (x < 0 || y < 0 || x >= DotsWide() || y >= DotsHigh()) return;
    // Braille dot numbering: 1-3 and 7 down the left column, 4-6 and 8 down the right.
    static constexpr std::uint8_t kBits[kDotsY][kDotsX] = {
        {0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};
    const auto cell = static_cast<std::size_t>((y / kDotsY) * width_ + x / kDotsX);
    cells_[cell] |= kBits[y % kDotsY][x % kDotsX];
    series_[cell] = series;
  }

  void Line(int x0, int y0, int x1, int y1, std::size_t series) {  // Bresenham
    const int dx = std::abs(x1 - x0), sx = x0 < x1 ? 1 : -1;
    const int dy = -std::abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    for (int err = dx + dy;;) {
      Set(x0, y0, series);
      if (x0 == x1 && y0 == y1) return;
      const int e2 = 2 * err;
      if (e2 >= dy) err += dy, x0 += sx;
      if (e2 <= dx) err += dx, y0 += sy;
    }
  }

  // One row of cells: braille characters (UTF-8) in their series' colour, or else each series's
  // marker for a cell with any dot.
  std::string Row(int row, bool braille, bool color) const {
    std::string out;
    for (int c = 0; c < width_; ++c) {
      const auto cell = static_cast<std::size_t>(row * width_ + c);
      const std::uint8_t bits = cells_[cell];
      if (bits == 0) {
        out += ' ';
      } else if (!braille) {
        out += Paint(color, ColorOf(series_[cell]), std::string(1, MarkerOf(series_[cell])));
      } else {
        // U+2800 + bits: E2, A0 | bits >> 6, 80 | bits & 3F.
        const char dots[] = {static_cast<char>(0xE2), static_cast<char>(0xA0 | (bits >> 6)),
                             static_cast<char>(0x80 | (bits & 0x3F))};
        out += Paint(color, ColorOf(series_[cell]), std::string_view(dots, sizeof dots));
      }
    }
    return out;
  }

  static char MarkerOf(std::size_t series) {
    return kSeriesMarkers[series % kSeriesMarkers.size()];
  }
  static std::string_view ColorOf(std::size_t series) {
    return kSeriesColors[series % std::size(kSeriesColors)];
  }

 private:
  int width_, height_;
  std::vector<std::uint8_t> cells_;
  std::vector<std::size_t> series_;
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

Points Finite(const Points& points) {
  Points out;
  for (const auto& p : points) {
    if (std::isfinite(p.first) && std::isfinite(p.second)) out.push_back(p);
  }
  return out;
}

std::string Counted(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

struct Range {
  double x_min, x_max, y_min, y_max;
};

// The range of every point of every series; at least one series holds a point.
Range RangeOf(const std::vector<Points>& series) {
  Range r{INFINITY, -INFINITY, INFINITY, -INFINITY};
  for (const Points& points : series) {
    for (const auto& [x, y] : points) {
      r.x_min = std::min(r.x_min, x), r.x_max = std::max(r.x_max, x);
      r.y_min = std::min(r.y_min, y), r.y_max = std::max(r.y_max, y);
    }
  }
  return r;
}

// The grid with its value labels and step axis, each series drawn in its own colour or marker.
void PrintGrid(const std::vector<Points>& series, const Range& range, const PlotStyle& style,
               bool braille, std::ostream& out) {
  const int cols = std::max(style.width, 2), rows = std::max(style.height, 2);
  Canvas canvas(cols, rows);
  const auto dot = [&](const std::pair<double, double>& p) {
    return std::pair{
        Scale(p.first, range.x_min, range.x_max, canvas.DotsWide()),
        canvas.DotsHigh() - 1 - Scale(p.second, range.y_min, range.y_max, canvas.DotsHigh())};
  };
  for (std::size_t s = 0; s < series.size(); ++s) {
    if (series[s].empty()) continue;
    auto previous = dot(series[s].front());
    canvas.Set(previous.first, previous.second, s);
    for (std::size_t i = 1; i < series[s].size(); ++i) {
      const auto next = dot(series[s][i]);
      canvas.Line(previous.first, previous.second, next.first, next.second, s);
      previous = next;
    }
  }

  const std::string top = Number(range.y_max), bottom = Number(range.y_min);
  const std::size_t label = std::max(top.size(), bottom.size());
  for (int r = 0; r < rows; ++r) {
    std::string text = r == 0 ? top : r == rows - 1 ? bottom : "";
    text.insert(0, label - text.size(), ' ');
    out << "  " << text << " |" << canvas.Row(r, braille, style.color) << '\n';
  }
  out << "  " << std::string(label, ' ') << " +" << std::string(static_cast<std::size_t>(cols), '-')
      << '\n';
  const std::string left = Number(range.x_min), right = Number(range.x_max);
  const std::size_t gap = static_cast<std::size_t>(cols) > left.size() + right.size()
                              ? static_cast<std::size_t>(cols) - left.size() - right.size()
                              : 1;
  out << "  " << std::string(label, ' ') << "  " << left << std::string(gap, ' ') << right << '\n';
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
  const std::vector<Points> points{Finite(series.points)};
  out << series.title << ": " << Counted(points[0].size(), "point", "points");
  if (points[0].empty()) {
    out << '\n';
    return;
  }
  const Range range = RangeOf(points);
  out << ", steps " << Number(range.x_min) << ".." << Number(range.x_max) << '\n';
  PrintGrid(points, range, style, style.braille, out);
}

void PrintPlots(std::string_view title, std::span<const PlotSeries> series, const PlotStyle& style,
                std::ostream& out) {
  std::vector<Points> points;
  for (const PlotSeries& s : series) points.push_back(Finite(s.points));
  const bool any =
      std::any_of(points.begin(), points.end(), [](const Points& p) { return !p.empty(); });
  out << title << ": " << Counted(series.size(), "series", "series");
  const Range range = any ? RangeOf(points) : Range{};
  if (any) out << ", steps " << Number(range.x_min) << ".." << Number(range.x_max);
  out << '\n';
  // Braille dots tell series apart only by their colour.
  const bool braille = style.braille && style.color;
  for (std::size_t s = 0; s < series.size(); ++s) {
    const std::string mark = braille ? "\xE2\xA3\xBF" : std::string(1, Canvas::MarkerOf(s));
    out << "  " << Paint(style.color, Canvas::ColorOf(s), mark) << ' ' << series[s].title << ": "
        << Counted(points[s].size(), "point", "points") << '\n';
  }
  if (any) PrintGrid(points, range, style, braille, out);
}

}  // namespace dtrain::cli
