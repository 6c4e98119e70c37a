#include "cmd/text_table.h"

#include <algorithm>

#include "cmd/terminal.h"

namespace dtrain::cli {

TextTable::TextTable(std::vector<std::string> header, std::vector<bool> right_aligned)
    : header_(std::move(header)), right_aligned_(std::move(right_aligned)) {
  right_aligned_.resize(header_.size(), false);
}

void TextTable::AddRow(std::vector<TextCell> cells) {
  cells.resize(header_.size());
  for (TextCell& cell : cells) cell.text = Printable(cell.text);  // one row stays one line
  rows_.push_back(std::move(cells));
}

void TextTable::Print(std::ostream& out, bool color, std::string_view indent) const {
  std::vector<std::size_t> width(header_.size());
  for (std::size_t c = 0; c < header_.size(); ++c) {
    width[c] = header_[c].size();
    for (const auto& row : rows_) width[c] = std::max(width[c], row[c].text.size());
  }
  const auto line = [&](const std::vector<TextCell>& cells) {
    std::string text(indent);
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const bool last = c + 1 == cells.size();
      const std::string pad(width[c] - cells[c].text.size(), ' ');
      const std::string painted =
          cells[c].sgr.empty() ? cells[c].text : Paint(color, cells[c].sgr, cells[c].text);
      if (c > 0) text += "  ";
      text += right_aligned_[c] ? pad + painted : painted + (last ? "" : pad);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  std::vector<TextCell> header;
  for (const std::string& h : header_) header.push_back({h});
  line(header);
  for (const auto& row : rows_) line(row);
}

}  // namespace dtrain::cli
