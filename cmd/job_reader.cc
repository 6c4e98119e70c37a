#include "cmd/job_reader.h"

#include <limits>
#include <map>

#include "cmd/json_fields.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "daemon/store/job_views.h"
#include "daemon/store/metric_value.h"

namespace dtrain::cli {
namespace {

// The rows whose name contains `name` (the daemon filters too; an older one may not).
std::vector<store::MetricRow> Named(std::vector<store::MetricRow> rows, const std::string& name) {
  std::erase_if(rows, [&name](const store::MetricRow& row) {
    return row.name.find(name) == std::string::npos;
  });
  return rows;
}

}  // namespace

CliResult<JobReader> JobReader::Open(const std::string& db, const GlobalOptions& globals) {
  if (!db.empty()) {
    CliResult<std::unique_ptr<store::Store>> store = OpenExistingStore(db);
    if (!store.ok()) return store.error();
    return JobReader(db, std::move(store).value(), std::nullopt);
  }
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return client.error();
  return JobReader("", nullptr, std::move(client).value());
}

CliResult<std::vector<store::MetricRow>> JobReader::Metrics(std::int64_t job,
                                                            const std::string& name) {
  if (store_ != nullptr) {
    if (CliResult<store::JobRecord> record = StoredJob(*store_, job, db_); !record.ok()) {
      return record.error();
    }
    auto rows = store_->Metrics(job, "");
    if (!rows.ok()) return ErrorFrom(rows.status());
    return Named(std::move(rows).value(), name);
  }
  nlohmann::json request = {{"type", "metrics"}, {"id", job}};
  if (!name.empty()) request["name"] = name;
  CliResult<nlohmann::json> reply = client_->Request(std::move(request));
  if (!reply.ok()) return reply.error();
  std::vector<store::MetricRow> rows;
  for (const nlohmann::json& m : JsonArray(reply.value(), "metrics")) {
    rows.push_back({.step = JsonInt(m, "step"),
                    .worker = static_cast<int>(JsonInt(m, "worker")),
                    .name = Printable(JsonString(m, "name")),
                    // null: NaN, "inf"/"-inf": the infinities (store/metric_value.h)
                    .value = store::MetricValueFromJson(m.value("value", nlohmann::json()))
                                 .value_or(std::numeric_limits<double>::quiet_NaN()),
                    .epoch = JsonNumber(m, "epoch"),
                    .time = JsonNumber(m, "time")});
  }
  return Named(std::move(rows), name);
}

CliResult<nlohmann::json> JobReader::Job(std::int64_t job) {
  if (store_ != nullptr) {
    if (CliResult<store::JobRecord> record = StoredJob(*store_, job, db_); !record.ok()) {
      return record.error();
    }
    Result<nlohmann::json> object = store::StoredJobJson(*store_, job, false);
    if (!object.ok()) return ErrorFrom(object.status());
    return std::move(object).value();
  }
  CliResult<nlohmann::json> reply = client_->Request({{"type", "status"}, {"id", job}});
  if (!reply.ok()) return reply.error();
  return JsonObject(reply.value(), "job");
}

CliResult<std::string> JobReader::Settings(std::int64_t job) {
  if (store_ != nullptr) {
    CliResult<store::JobRecord> record = StoredJob(*store_, job, db_);
    if (!record.ok()) return record.error();
    return record.value().spec_toml;
  }
  CliResult<nlohmann::json> reply = client_->Request({{"type", "settings"}, {"id", job}});
  if (!reply.ok()) return reply.error();
  return JsonString(reply.value(), "spec_toml");
}

std::vector<std::pair<double, double>> MeanByStep(std::span<const store::MetricRow> rows) {
  std::map<std::int64_t, std::pair<double, int>> sums;  // step -> (sum, count)
  for (const store::MetricRow& r : rows) {
    auto& at = sums[r.step];
    at.first += r.value;
    ++at.second;
  }
  std::vector<std::pair<double, double>> points;
  for (const auto& [step, sum] : sums) {
    points.emplace_back(static_cast<double>(step), sum.first / sum.second);
  }
  return points;
}

}  // namespace dtrain::cli
