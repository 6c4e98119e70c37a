// ClassReport: how a classifier's predictions fall per class — the confusion matrix (rows the
// true class, columns the predicted one), each class's precision, recall, F1 and support, and
// their macro and micro averages. What `dtrain eval --per-class` prints and what a job keeps of
// its final evaluation (daemon/store).
//
//   Result<ClassReport> r = ClassReportOf(labels, predictions, /*classes=*/10);
//   r.value().Count(3, 5)            // rows of true class 3 predicted as 5
//   r.value().per_class[3].recall    // Count(3, 3) / rows of true class 3
//
// Invariants: confusion has classes * classes counts; the scores are computed from it alone
// (ScoresOf), so a report rebuilt from a stored matrix equals the one first computed. A ratio
// whose denominator is zero — precision of a class never predicted, recall of a class with no
// true rows, F1 where precision + recall is zero — is 0 (scikit-learn's zero_division=0). Macro
// averages every class of the model alike, those with no rows included; micro pools the counts
// (for one label a row it is the accuracy). Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace dtrain::train {

struct ClassScores {
  double precision = 0.0;
  double recall = 0.0;
  double f1 = 0.0;
  std::int64_t support = 0;  // rows of this true class (averages: all rows)
};

struct ClassReport {
  int classes = 0;
  std::vector<std::int64_t> confusion;  // [true * classes + predicted]
  std::vector<ClassScores> per_class;   // one per class, in class order
  ClassScores macro;
  ClassScores micro;

  std::int64_t Count(int truth, int predicted) const {
    return confusion[static_cast<std::size_t>(truth) * static_cast<std::size_t>(classes) +
                     static_cast<std::size_t>(predicted)];
  }
};

// The most classes a report is made for (a job keeps its matrix, classes² counts, in the store).
inline constexpr int kMaxReportClasses = 100;

// The report of `classes` (2 ..= kMaxReportClasses) classes from each row's true and predicted
// class. An error when the spans differ in length or a label or prediction is not an integer in
// [0, classes).
Result<ClassReport> ClassReportOf(std::span<const float> labels, std::span<const float> predictions,
                                  int classes);

// The report of a confusion matrix of classes * classes non-negative counts (rows the true
// class); an error when its size is not a square of 2 ..= kMaxReportClasses classes or a count is
// negative.
Result<ClassReport> ScoresOf(std::vector<std::int64_t> confusion);

// The report as the text of a JSON object, the one form the CLI, the store's job view and the
// dashboard read:
//   {"classes": C, "confusion": [[count, ...], ...] (row = true class, column = predicted),
//    "per_class": [{"class", "precision", "recall", "f1", "support"}, ...],
//    "macro": {"precision", "recall", "f1", "support"}, "micro": {...}}
// (the averages' support: all rows).
std::string ClassReportJson(const ClassReport& report);

// The confusion matrix alone as JSON rows of counts, the "confusion" above ("[[5,1],[0,7]]"): how
// the store keeps it and a worker sends it to its daemon.
std::string ConfusionRowsJson(const ClassReport& report);
// The report of such rows; an error saying what is wrong when they are not a square matrix of
// 2 ..= kMaxReportClasses rows of non-negative integers.
Result<ClassReport> ClassReportOfRows(std::string_view json_rows);

}  // namespace dtrain::train
