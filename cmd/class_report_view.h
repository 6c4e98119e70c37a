// The human form of a per-class report (core/train/class_report.h), for `dtrain eval
// --per-class`: the confusion matrix (a row per true class, a column per predicted class), then
// a row per class of precision, recall, F1 and support, and the macro and micro averages, each
// an aligned table (text_table.h).
#pragma once

#include <ostream>

#include "core/train/class_report.h"

namespace dtrain::cli {

void PrintClassReport(std::ostream& out, const train::ClassReport& report);

}  // namespace dtrain::cli
