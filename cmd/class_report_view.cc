#include "cmd/class_report_view.h"

#include <cstdio>
#include <string>
#include <vector>

#include "cmd/text_table.h"

namespace dtrain::cli {
namespace {

std::string Fixed(double value) {
  char cell[32];
  std::snprintf(cell, sizeof cell, "%.4f", value);
  return cell;
}

void AddScores(TextTable& table, std::string name, const train::ClassScores& scores) {
  table.AddRow({{std::move(name)},
                {Fixed(scores.precision)},
                {Fixed(scores.recall)},
                {Fixed(scores.f1)},
                {std::to_string(scores.support)}});
}

}  // namespace

void PrintClassReport(std::ostream& out, const train::ClassReport& report) {
  std::vector<std::string> header{"TRUE\\PREDICTED"};
  for (int c = 0; c < report.classes; ++c) header.push_back(std::to_string(c));
  TextTable confusion(header, std::vector<bool>(header.size(), true));
  for (int truth = 0; truth < report.classes; ++truth) {
    std::vector<TextCell> row{{std::to_string(truth)}};
    for (int predicted = 0; predicted < report.classes; ++predicted) {
      row.push_back({std::to_string(report.Count(truth, predicted))});
    }
    confusion.AddRow(std::move(row));
  }
  out << "confusion matrix\n";
  confusion.Print(out, false, "  ");
  TextTable scores({"CLASS", "PRECISION", "RECALL", "F1", "SUPPORT"},
                   {true, true, true, true, true});
  for (int c = 0; c < report.classes; ++c) {
    AddScores(scores, std::to_string(c), report.per_class[static_cast<std::size_t>(c)]);
  }
  AddScores(scores, "macro", report.macro);
  AddScores(scores, "micro", report.micro);
  out << "per class\n";
  scores.Print(out, false, "  ");
}

}  // namespace dtrain::cli
