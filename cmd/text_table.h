// TextTable: rows of text cells printed in columns padded to their widest cell, for the human
// output of status, list and checkpoints. A cell may carry a colour, which does not count
// toward its width; the last column is not padded.
//
//   TextTable t({"ID", "STATE"}, {true, false});   // ID right-aligned
//   t.AddRow({{"7"}, {"running", kCyan}});
//   t.Print(std::cout, ColorOnStdout(), "  ");
//
// One thread at a time.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace dtrain::cli {

struct TextCell {
  std::string text;
  std::string_view sgr = {};  // a terminal.h colour, or empty
};

class TextTable {
 public:
  TextTable(std::vector<std::string> header, std::vector<bool> right_aligned);

  // Missing cells print empty; controls in a cell's text print escaped (terminal.h, Printable).
  void AddRow(std::vector<TextCell> cells);
  bool empty() const { return rows_.empty(); }
  // The header and every row, each line starting with `indent`; colours only when `color`.
  void Print(std::ostream& out, bool color, std::string_view indent = "") const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_aligned_;
  std::vector<std::vector<TextCell>> rows_;
};

}  // namespace dtrain::cli
