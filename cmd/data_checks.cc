#include "cmd/data_checks.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "cmd/terminal.h"
#include "config/suggest.h"
#include "core/data/readers.h"
#include "daemon/runner/job_data.h"

namespace dtrain::cli {
namespace {

constexpr std::size_t kListedColumns = 12;

// "a, b, c" (the first kListedColumns, then how many in all).
std::string ColumnList(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < kListedColumns; ++i) {
    out += (i > 0 ? ", " : "") + names[i];
  }
  if (names.size() > kListedColumns) out += ", ... (" + std::to_string(names.size()) + " in all)";
  return out;
}

// A CSV file whose header does not name the label column: its columns and the near match. Ok
// when it does, or when the file cannot be read (the reader says why).
Status CheckLabelColumn(const config::DataConfig& d, const std::string& path) {
  if (path.empty() || d.format != config::DataFormat::kCsv || d.label_column.empty() ||
      !d.header) {
    return Status::Ok();
  }
  Result<std::vector<std::string>> names = data::ReadCsvFirstLine(path, d.delimiter);
  if (!names.ok() || std::find(names.value().begin(), names.value().end(), d.label_column) !=
                         names.value().end()) {
    return Status::Ok();
  }
  const std::vector<std::string_view> views(names.value().begin(), names.value().end());
  std::string message = path + ": data.label_column is '" + d.label_column +
                        "', which the header line does not name; its columns: " +
                        ColumnList(names.value());
  if (const std::string_view close = config::ClosestName(d.label_column, views); !close.empty()) {
    message += " (did you mean '" + std::string(close) + "'?)";
  }
  return Status::Error(message);
}

}  // namespace

CliResult<CheckedData> CheckJobData(const config::JobConfig& job) {
  CheckedData out;
  if (job.data.sparse) {
    Result<runner::SparseJobData> sparse = runner::LoadSparseJobData(job);
    if (!sparse.ok()) return ErrorFrom(sparse.status(), kExitUsage);
    out.sparse = std::move(sparse).value();
    return out;
  }
  for (const std::string* path : {&job.data.train, &job.data.test}) {
    if (Status named = CheckLabelColumn(job.data, *path); !named.ok()) {
      return ErrorFrom(named, kExitUsage);
    }
  }
  Result<model::ModelSpec> spec = runner::CheckJobShapes(job);
  if (!spec.ok()) return ErrorFrom(spec.status(), kExitUsage);
  out.spec = std::move(spec).value();
  return out;
}

bool CheckTrialsData(const std::vector<config::ResolvedTrial>& trials) {
  for (const config::ResolvedTrial& t : trials) {
    if (CliResult<CheckedData> data = CheckJobData(t.job); !data.ok()) {
      PrintError("trial " + std::to_string(t.trial.index) + " (" + config::TrialLabel(t.trial) +
                 "):");
      Report(data.error());
      return false;
    }
  }
  return true;
}

}  // namespace dtrain::cli
