// Data for bench/sparse-clicks/run.sh: one set of synthetic click rows (data::MakeClicks) split
// into DIR/train.svm (the first N rows) and DIR/test.svm (the next T), so that both come from the
// same planted model (its weights are a function of the seed), plus the planted model's own test
// log loss and AUC — the best any model can do on average — printed as `key: value` lines and
// kept in DIR/planted.txt for the script to read.
// Usage: bench_click_data [--rows N] [--features F] [--nonzeros K] [--seed S] [--test-rows T]
//                         --out DIR
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "core/data/click_synthetic.h"
#include "core/data/sparse_rows.h"
#include "core/train/auc.h"

namespace {

using namespace dtrain;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// Parses all of `text` as a whole number in [low, high].
bool ParseCount(const char* text, std::uint64_t low, std::uint64_t high, std::uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || text[0] == '-') return false;
  if (value < low || value > high) return false;
  *out = value;
  return true;
}

// Moves rows [first, rows()) of `all` into a set of their own; `all` keeps the rows before.
data::SparseRows SplitOff(data::SparseRows& all, std::size_t first) {
  data::SparseRows tail;
  tail.features = all.features;
  tail.num_classes = all.num_classes;
  tail.source = all.source;
  const std::uint64_t base = all.row_start[first];
  tail.index.assign(all.index.begin() + static_cast<std::ptrdiff_t>(base), all.index.end());
  tail.value.assign(all.value.begin() + static_cast<std::ptrdiff_t>(base), all.value.end());
  tail.labels.assign(all.labels.begin() + static_cast<std::ptrdiff_t>(first), all.labels.end());
  tail.row_start.clear();
  for (std::size_t r = first; r < all.row_start.size(); ++r) {
    tail.row_start.push_back(all.row_start[r] - base);
  }
  all.index.resize(base);
  all.value.resize(base);
  all.labels.resize(first);
  all.row_start.resize(first + 1);
  return tail;
}

double MeanLabel(const data::SparseRows& rows) {
  double sum = 0.0;
  for (const float y : rows.labels) sum += y;
  return rows.rows() == 0 ? 0.0 : sum / static_cast<double>(rows.rows());
}

// Mean negative log-likelihood of 0/1 labels under probabilities p (clamped to [1e-15, 1 - 1e-15],
// as scikit-learn's log_loss does).
double LogLoss(std::span<const float> p, std::span<const float> labels) {
  double sum = 0.0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double q = std::clamp(static_cast<double>(p[i]), 1e-15, 1.0 - 1e-15);
    sum -= labels[i] > 0.5f ? std::log(q) : std::log1p(-q);
  }
  return p.empty() ? 0.0 : sum / static_cast<double>(p.size());
}

int Usage(const char* program) {
  std::fprintf(stderr,
               "usage: %s [--rows N] [--features F] [--nonzeros K] [--seed S] [--test-rows T]\n"
               "       --out DIR\n"
               "writes DIR/train.svm (N rows), DIR/test.svm (T rows) and DIR/planted.txt\n",
               program);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t rows = 1'000'000;
  std::uint64_t test_rows = 100'000;
  std::uint64_t features = 10'000'000;
  std::uint64_t nonzeros = 40;
  std::uint64_t seed = 3;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return Usage(argv[0]);
    const char* value = argv[++i];
    bool ok = true;
    if (arg == "--rows") {
      ok = ParseCount(value, 1, 1'000'000'000, &rows);
    } else if (arg == "--test-rows") {
      ok = ParseCount(value, 1, 1'000'000'000, &test_rows);
    } else if (arg == "--features") {
      // liblinear reads indices as int: keep them below 2^31.
      ok = ParseCount(value, 1, 0x7FFF'FFFE, &features);
    } else if (arg == "--nonzeros") {
      ok = ParseCount(value, 1, 100'000, &nonzeros);
    } else if (arg == "--seed") {
      ok = ParseCount(value, 0, UINT64_MAX, &seed);
    } else if (arg == "--out") {
      out = value;
    } else {
      return Usage(argv[0]);
    }
    if (!ok) {
      std::fprintf(stderr, "%s: the value of %s is not a whole number in range\n", argv[0],
                   arg.c_str());
      return 2;
    }
  }
  if (out.empty()) return Usage(argv[0]);
  std::error_code error;
  std::filesystem::create_directories(out, error);
  if (error) {
    std::fprintf(stderr, "%s: cannot create the directory %s: %s\n", argv[0], out.c_str(),
                 error.message().c_str());
    return 1;
  }

  const data::ClickOptions options{.rows = rows + test_rows,
                                   .features = features,
                                   .nonzeros = static_cast<int>(nonzeros),
                                   .seed = seed};
  const Clock::time_point generate_start = Clock::now();
  data::ClickData clicks = data::MakeClicks(options);
  data::SparseRows test = SplitOff(clicks.rows, rows);
  const double generate_seconds = Seconds(generate_start);
  const std::span<const float> test_probability =
      std::span<const float>(clicks.probability).subspan(rows);
  const double planted_log_loss = LogLoss(test_probability, test.labels);
  const double planted_auc = train::Auc(test_probability, test.labels);
  const double nnz_per_row = static_cast<double>(clicks.rows.NonZeros() + test.NonZeros()) /
                             static_cast<double>(rows + test_rows);

  const std::string train_path = out + "/train.svm";
  const std::string test_path = out + "/test.svm";
  const Clock::time_point write_start = Clock::now();
  for (const Status& status :
       {data::WriteLibsvm(clicks.rows, train_path), data::WriteLibsvm(test, test_path)}) {
    if (!status.ok()) {
      std::fprintf(stderr, "%s: %s\n", argv[0], status.message().c_str());
      return 1;
    }
  }
  const double write_seconds = Seconds(write_start);
  const auto size_mib = [](const std::string& path) {
    std::error_code ignored;
    const std::uintmax_t bytes = std::filesystem::file_size(path, ignored);
    return ignored ? 0.0 : static_cast<double>(bytes) / (1024.0 * 1024.0);
  };

  char report[2048];
  std::snprintf(report, sizeof report,
                "train_rows: %llu\n"
                "test_rows: %llu\n"
                "features: %llu\n"
                "nonzeros_drawn: %llu\n"
                "seed: %llu\n"
                "nnz_per_row: %.2f\n"
                "click_rate_train: %.4f\n"
                "click_rate_test: %.4f\n"
                "planted_test_log_loss: %.4f\n"
                "planted_test_auc: %.4f\n"
                "generate_seconds: %.2f\n"
                "write_seconds: %.2f\n"
                "train_svm_mib: %.1f\n"
                "test_svm_mib: %.1f\n",
                static_cast<unsigned long long>(rows), static_cast<unsigned long long>(test_rows),
                static_cast<unsigned long long>(features),
                static_cast<unsigned long long>(nonzeros), static_cast<unsigned long long>(seed),
                nnz_per_row, MeanLabel(clicks.rows), MeanLabel(test), planted_log_loss, planted_auc,
                generate_seconds, write_seconds, size_mib(train_path), size_mib(test_path));
  std::fputs(report, stdout);
  const std::string planted_path = out + "/planted.txt";
  std::FILE* planted = std::fopen(planted_path.c_str(), "w");
  const bool written = planted != nullptr && std::fputs(report, planted) >= 0;
  if (planted == nullptr || std::fclose(planted) != 0 || !written) {
    std::fprintf(stderr, "%s: cannot write %s\n", argv[0], planted_path.c_str());
    return 1;
  }
  return 0;
}
