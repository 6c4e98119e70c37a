// Scores another tool's click predictions for bench/sparse-clicks/run.sh: the 0/1 labels of a
// libsvm test file (each line's first token) against a file in liblinear-predict's `-b 1` format
// (a header "labels 1 0" or "labels 0 1", then per row the predicted label and the probabilities
// in the header's order). Prints the log loss and AUC (train::Auc) of P(label = 1) and the
// accuracy of the predicted labels as `key: value` lines. Errors name the file and line and what
// is wrong with it, never the line's text.
// Usage: bench_score_predictions TEST.svm PREDICTIONS
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/train/auc.h"

namespace {

using namespace dtrain;

// Splits off the next space- or tab-separated token of `rest`; empty when none is left.
std::string_view NextToken(std::string_view& rest) {
  const std::size_t begin = rest.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) {
    rest = {};
    return {};
  }
  const std::size_t end = rest.find_first_of(" \t\r", begin);
  const std::string_view token = rest.substr(begin, end - begin);
  rest = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
  return token;
}

bool ParseNumber(std::string_view token, double* out) {
  if (!token.empty() && token.front() == '+') token.remove_prefix(1);
  const auto [end, error] = std::from_chars(token.data(), token.data() + token.size(), *out);
  return error == std::errc() && end == token.data() + token.size() && std::isfinite(*out);
}

// A 0/1 label: 1 for "1", 0 for "0" (any spelling of those numbers), -1 for anything else.
int ParseLabel(std::string_view token) {
  double value = 0.0;
  if (!ParseNumber(token, &value)) return -1;
  if (value == 0.0) return 0;
  if (value == 1.0) return 1;
  return -1;
}

Result<std::vector<float>> ReadLabels(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Error(path + ": cannot open");
  std::vector<float> labels;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    std::string_view rest = line;
    const std::string_view token = NextToken(rest);
    if (token.empty()) return Status::Error(path + ":" + std::to_string(number) + ": no label");
    const int label = ParseLabel(token);
    if (label < 0) {
      return Status::Error(path + ":" + std::to_string(number) + ": the label is not 0 or 1");
    }
    labels.push_back(static_cast<float>(label));
  }
  if (in.bad()) return Status::Error(path + ": read error");
  if (labels.empty()) return Status::Error(path + ": no rows");
  return labels;
}

struct Predictions {
  std::vector<float> p_click;    // P(label = 1) per row
  std::vector<float> predicted;  // the predicted label per row
};

Result<Predictions> ReadPredictions(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Error(path + ": cannot open");
  std::string line;
  if (!std::getline(in, line)) return Status::Error(path + ": empty (no \"labels\" header)");
  std::string_view rest = line;
  const std::string_view header_word = NextToken(rest);
  const int first = ParseLabel(NextToken(rest));
  const int second = ParseLabel(NextToken(rest));
  if (header_word != "labels" || first < 0 || second < 0 || first == second ||
      !NextToken(rest).empty()) {
    return Status::Error(path +
                         ":1: the header is not \"labels 1 0\" or \"labels 0 1\" (predictions "
                         "made with -b 1 by a model of the two labels 0 and 1?)");
  }
  const int click_column = first == 1 ? 0 : 1;
  Predictions out;
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    rest = line;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const int predicted = ParseLabel(NextToken(rest));
    if (predicted < 0) return Status::Error(where + "the predicted label is not 0 or 1");
    double p[2];
    for (double& q : p) {
      if (!ParseNumber(NextToken(rest), &q)) {
        return Status::Error(where + "expected two probabilities after the predicted label");
      }
      if (q < 0.0 || q > 1.0) return Status::Error(where + "a probability outside [0, 1]");
    }
    if (!NextToken(rest).empty()) return Status::Error(where + "more than two probabilities");
    out.p_click.push_back(static_cast<float>(p[click_column]));
    out.predicted.push_back(static_cast<float>(predicted));
  }
  if (in.bad()) return Status::Error(path + ": read error");
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s TEST.svm PREDICTIONS   (liblinear-predict -b 1 output)\n",
                 argv[0]);
    return 2;
  }
  const Result<std::vector<float>> labels = ReadLabels(argv[1]);
  const Result<Predictions> predictions =
      labels.ok() ? ReadPredictions(argv[2]) : Result<Predictions>(labels.status());
  Status status = predictions.status();
  if (status.ok() && predictions.value().p_click.size() != labels.value().size()) {
    status = Status::Error(
        std::string(argv[2]) + ": " + std::to_string(predictions.value().p_click.size()) +
        " predictions for the " + std::to_string(labels.value().size()) + " rows of " + argv[1]);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", argv[0], status.message().c_str());
    return 1;
  }
  const std::vector<float>& y = labels.value();
  const Predictions& p = predictions.value();
  double loss = 0.0;
  std::size_t correct = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    // Clamped as scikit-learn's log_loss clamps: a confident mistake costs 34.5, not infinity.
    const double q = std::clamp(static_cast<double>(p.p_click[i]), 1e-15, 1.0 - 1e-15);
    loss -= y[i] > 0.5f ? std::log(q) : std::log1p(-q);
    correct += p.predicted[i] == y[i] ? 1 : 0;
  }
  const double n = static_cast<double>(y.size());
  std::printf("rows: %zu\nlog_loss: %.4f\nauc: %.4f\naccuracy: %.4f\n", y.size(), loss / n,
              train::Auc(p.p_click, y), static_cast<double>(correct) / n);
  return 0;
}
