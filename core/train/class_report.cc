// ClassReportOf / ScoresOf: counting a confusion matrix and the ratios read from it
// (class_report.h).
#include "core/train/class_report.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace dtrain::train {
namespace {

double Ratio(std::int64_t numerator, std::int64_t denominator) {
  return denominator == 0 ? 0.0 : static_cast<double>(numerator) / static_cast<double>(denominator);
}

double F1(double precision, double recall) {
  const double sum = precision + recall;
  return sum == 0.0 ? 0.0 : 2.0 * precision * recall / sum;
}

// The class `value` names, or -1 when it is not an integer in [0, classes).
int ClassOf(float value, int classes) {
  if (!(value >= 0.0f) || value >= static_cast<float>(classes) || std::floor(value) != value) {
    return -1;
  }
  return static_cast<int>(value);
}

nlohmann::json ScoresJson(const ClassScores& scores) {
  return {{"precision", scores.precision},
          {"recall", scores.recall},
          {"f1", scores.f1},
          {"support", scores.support}};
}

// The matrix as an array of rows (true classes) of counts.
nlohmann::json ConfusionRows(const ClassReport& report) {
  const auto n = static_cast<std::size_t>(report.classes);
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t row = 0; row < n; ++row) {
    rows.push_back(std::vector<std::int64_t>(
        report.confusion.begin() + static_cast<std::ptrdiff_t>(row * n),
        report.confusion.begin() + static_cast<std::ptrdiff_t>((row + 1) * n)));
  }
  return rows;
}

}  // namespace

Result<ClassReport> ClassReportOf(std::span<const float> labels, std::span<const float> predictions,
                                  int classes) {
  if (classes < 2 || classes > kMaxReportClasses) {
    return Status::Error("a per-class report is made for 2 to " +
                         std::to_string(kMaxReportClasses) + " classes, not " +
                         std::to_string(classes));
  }
  if (labels.size() != predictions.size()) {
    return Status::Error(std::to_string(labels.size()) + " labels for " +
                         std::to_string(predictions.size()) + " predictions");
  }
  const auto n = static_cast<std::size_t>(classes);
  std::vector<std::int64_t> confusion(n * n, 0);
  for (std::size_t row = 0; row < labels.size(); ++row) {
    const int truth = ClassOf(labels[row], classes);
    const int predicted = ClassOf(predictions[row], classes);
    if (truth < 0 || predicted < 0) {
      return Status::Error("row " + std::to_string(row) + " has " +
                           (truth < 0 ? "label " + std::to_string(labels[row])
                                      : "prediction " + std::to_string(predictions[row])) +
                           ", not a class of the model's " + std::to_string(classes) + " (0 to " +
                           std::to_string(classes - 1) + ")");
    }
    ++confusion[static_cast<std::size_t>(truth) * n + static_cast<std::size_t>(predicted)];
  }
  return ScoresOf(std::move(confusion));
}

Result<ClassReport> ScoresOf(std::vector<std::int64_t> confusion) {
  const auto n = static_cast<std::size_t>(std::lround(std::sqrt(confusion.size())));
  if (n * n != confusion.size() || n < 2 || n > static_cast<std::size_t>(kMaxReportClasses)) {
    return Status::Error("a confusion matrix of " + std::to_string(confusion.size()) +
                         " counts is not one of 2 to " + std::to_string(kMaxReportClasses) +
                         " classes squared");
  }
  ClassReport report;
  report.classes = static_cast<int>(n);
  report.confusion = std::move(confusion);
  std::int64_t rows = 0, correct = 0;
  for (std::size_t c = 0; c < n; ++c) {
    std::int64_t truths = 0, predicted = 0;
    for (std::size_t other = 0; other < n; ++other) {
      const std::int64_t as_row = report.confusion[c * n + other];
      if (as_row < 0 || report.confusion[other * n + c] < 0) {
        return Status::Error("a confusion matrix holds a negative count");
      }
      truths += as_row;
      predicted += report.confusion[other * n + c];
    }
    const std::int64_t hits = report.confusion[c * n + c];
    ClassScores scores;
    scores.precision = Ratio(hits, predicted);
    scores.recall = Ratio(hits, truths);
    scores.f1 = F1(scores.precision, scores.recall);
    scores.support = truths;
    report.macro.precision += scores.precision;
    report.macro.recall += scores.recall;
    report.macro.f1 += scores.f1;
    report.per_class.push_back(scores);
    rows += truths;
    correct += hits;
  }
  report.macro.precision /= static_cast<double>(n);
  report.macro.recall /= static_cast<double>(n);
  report.macro.f1 /= static_cast<double>(n);
  report.macro.support = rows;
  // Pooled, every row is one true positive or one false positive (of its predicted class) and
  // one false negative (of its true class): precision and recall are both the accuracy.
  report.micro.precision = Ratio(correct, rows);
  report.micro.recall = report.micro.precision;
  report.micro.f1 = F1(report.micro.precision, report.micro.recall);
  report.micro.support = rows;
  return report;
}

std::string ClassReportJson(const ClassReport& report) {
  nlohmann::json per_class = nlohmann::json::array();
  for (std::size_t c = 0; c < report.per_class.size(); ++c) {
    nlohmann::json scores = ScoresJson(report.per_class[c]);
    scores["class"] = c;
    per_class.push_back(std::move(scores));
  }
  return nlohmann::json{{"classes", report.classes},
                        {"confusion", ConfusionRows(report)},
                        {"per_class", std::move(per_class)},
                        {"macro", ScoresJson(report.macro)},
                        {"micro", ScoresJson(report.micro)}}
      .dump();
}

std::string ConfusionRowsJson(const ClassReport& report) { return ConfusionRows(report).dump(); }

Result<ClassReport> ClassReportOfRows(std::string_view json_rows) {
  const nlohmann::json rows = nlohmann::json::parse(json_rows, nullptr, false);
  const Status bad =
      Status::Error("a confusion matrix is not JSON rows of counts, [[n, ...], ...]");
  if (!rows.is_array()) return bad;
  std::vector<std::int64_t> counts;
  for (const nlohmann::json& row : rows) {
    if (!row.is_array() || row.size() != rows.size()) {
      return Status::Error("a confusion matrix of " + std::to_string(rows.size()) +
                           " rows is not square");
    }
    for (const nlohmann::json& count : row) {
      if (!count.is_number_integer()) return bad;
      counts.push_back(count.get<std::int64_t>());
    }
  }
  return ScoresOf(std::move(counts));
}

}  // namespace dtrain::train
