#include "daemon/store/schema.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace schema_test {

using testing::Contains;
using testing::OpenRaw;
using testing::OpenStore;
using testing::SampleJob;
using testing::TempStoreDir;

std::int64_t UserVersion(Database& db) { return db.QueryInt("PRAGMA user_version").value(); }

std::int64_t TableCount(Database& db, const std::string& name) {
  Result<Statement> s =
      db.Prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1");
  BOOST_REQUIRE(s.ok());
  s.value().BindText(1, name);
  BOOST_REQUIRE(s.value().Step().value());
  return s.value().ColumnInt(0);
}

BOOST_AUTO_TEST_SUITE(store_schema)

BOOST_AUTO_TEST_CASE(open_creates_the_schema_in_wal_mode_with_its_version) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  OpenStore(path);
  Database db = OpenRaw(path);
  BOOST_TEST(UserVersion(db) == static_cast<std::int64_t>(StoreMigrations().size()));
  BOOST_TEST(db.QueryText("PRAGMA journal_mode").value() == "wal");
  for (const char* table : {"jobs", "events", "workers", "metrics", "checkpoints", "logs",
                            "job_tags", "best_models", "class_reports"}) {
    BOOST_TEST(TableCount(db, table) == 1, table);
  }
  BOOST_TEST(
      db.QueryInt("SELECT count(*) FROM sqlite_schema WHERE name = 'metrics_by_name'").value() ==
      1);
}

BOOST_AUTO_TEST_CASE(reopening_keeps_data_and_the_version) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  std::int64_t id = 0;
  {
    auto store = OpenStore(path);
    id = store->CreateJob(SampleJob("first")).value();
  }
  for (int i = 0; i < 2; ++i) {
    auto store = OpenStore(path);
    Result<JobRecord> job = store->GetJob(id);
    BOOST_REQUIRE(job.ok());
    BOOST_TEST(job.value().name == "first");
  }
  Database db = OpenRaw(path);
  BOOST_TEST(UserVersion(db) == static_cast<std::int64_t>(StoreMigrations().size()));
}

// A store at schema `version` holding job 1 (uid 1000), then `extra` statements run on it.
void OldStoreWithAJob(const std::string& path, std::size_t version,
                      std::initializer_list<const char*> extra = {}) {
  Database db = Database::Open(path, Database::kCreate).value();
  BOOST_REQUIRE(Migrate(db, StoreMigrations().first(version)).ok());
  BOOST_REQUIRE(db.Exec("INSERT INTO jobs (name, owner_uid, state, priority, spec_toml, created,"
                        " updated, reason) VALUES ('old', 1000, 'queued', 0, '', 1, 1, 'x')")
                    .ok());
  for (const char* sql : extra) BOOST_REQUIRE(db.Exec(sql).ok());
}

BOOST_AUTO_TEST_CASE(a_job_of_a_first_version_store_gets_the_owners_primary_group) {
  TempStoreDir dir;
  const std::string path = dir.Path("v1.db");
  OldStoreWithAJob(path, 1);
  auto store = OpenStore(path);  // migrates to the newest version
  Result<JobRecord> job = store->GetJob(1);
  BOOST_REQUIRE(job.ok());
  BOOST_TEST(job.value().owner_uid == 1000);
  BOOST_TEST(job.value().owner_gid == -1);  // the owner's primary group, looked up at its start
}

// A second-version store's metrics survive the copy that lets values be NaN.
BOOST_AUTO_TEST_CASE(a_second_version_store_keeps_its_metrics_and_takes_nan) {
  TempStoreDir dir;
  const std::string path = dir.Path("v2.db");
  OldStoreWithAJob(path, 2, {"INSERT INTO metrics VALUES (1, 10, 0, 'train_loss', 0.5, 0.1, 1)"});
  BOOST_TEST(!OpenRaw(path).Exec("INSERT INTO metrics VALUES (1, 11, 0, 'train_loss', NULL, 0, 1)")
                  .ok());  // version 2 refused a NaN
  auto store = OpenStore(path);  // migrates to the newest version
  BOOST_TEST(store->Metrics(1, "train_loss").value().size() == 1u);
  store->AppendMetrics(1, 0, std::vector<train::MetricPoint>{
                                 {11, 0.2, "train_loss", std::numeric_limits<double>::quiet_NaN()}});
  BOOST_REQUIRE(store->Flush().ok());
  const std::vector<MetricRow> rows = store->Metrics(1, "train_loss").value();
  BOOST_REQUIRE(rows.size() == 2u);
  BOOST_TEST(rows[0].value == 0.5);
  BOOST_TEST(std::isnan(rows[1].value));
}

// A fourth-version store (before tags): its jobs have none, a new job keeps its tags in order,
// and deleting a job deletes its tags.
BOOST_AUTO_TEST_CASE(a_store_before_tags_migrates_and_keeps_new_jobs_tags) {
  TempStoreDir dir;
  const std::string path = dir.Path("v4.db");
  OldStoreWithAJob(path, 4);
  {
    Database old = OpenRaw(path);
    BOOST_TEST(TableCount(old, "job_tags") == 0);
  }
  auto store = OpenStore(path);  // migrates to the newest version
  BOOST_TEST(store->GetJob(1).value().tags.empty());
  JobRecord tagged = SampleJob("tagged");
  tagged.tags = {"zeta", "alpha"};
  const std::int64_t id = store->CreateJob(tagged).value();
  BOOST_TEST(store->GetJob(id).value().tags == tagged.tags, boost::test_tools::per_element());
  const std::vector<JobRecord> all = store->ListJobs().value();
  BOOST_REQUIRE(all.size() == 2u);
  BOOST_TEST(all[0].tags.empty());
  BOOST_TEST(all[1].tags == tagged.tags, boost::test_tools::per_element());
  BOOST_REQUIRE(store->SetJobState(id, JobState::kCancelled, "test").ok());
  BOOST_REQUIRE(store->DeleteJob(id).ok());
  BOOST_TEST(OpenRaw(path).QueryInt("SELECT count(*) FROM job_tags").value() == 0);
}

// A fifth-version store (before best models): its jobs have none, and one saved after the
// migration is kept, replaced and deleted with its job.
BOOST_AUTO_TEST_CASE(a_store_before_best_models_migrates_and_keeps_them) {
  TempStoreDir dir;
  const std::string path = dir.Path("v5.db");
  OldStoreWithAJob(path, 5);
  {
    Database old = OpenRaw(path);
    BOOST_TEST(TableCount(old, "best_models") == 0);
  }
  auto store = OpenStore(path);  // migrates to the newest version
  BOOST_TEST(!store->BestModel(1).value().has_value());
  CheckpointData model = testing::SampleCheckpoint(20, 16);
  model.optimizer_state.clear();
  BOOST_REQUIRE(
      store->SaveBestModel(1, {.step = 20, .metric = "eval_accuracy", .value = 0.5}, ViewOf(model))
          .ok());
  BOOST_TEST(store->BestModel(1).value()->step == 20);
  BOOST_REQUIRE(store->SetJobState(1, JobState::kCancelled, "test").ok());
  BOOST_REQUIRE(store->DeleteJob(1).ok());
  BOOST_TEST(OpenRaw(path).QueryInt("SELECT count(*) FROM best_models").value() == 0);
}

// A seventh-version store (before per-class reports): its jobs have none, and one saved after
// the migration is kept.
BOOST_AUTO_TEST_CASE(a_store_before_class_reports_migrates_and_keeps_them) {
  TempStoreDir dir;
  const std::string path = dir.Path("v7.db");
  OldStoreWithAJob(path, 7);
  {
    Database old = OpenRaw(path);
    BOOST_TEST(TableCount(old, "class_reports") == 0);
  }
  auto store = OpenStore(path);  // migrates to the newest version
  BOOST_TEST(!store->FinalClassReport(1).value().has_value());
  Result<train::ClassReport> report =
      train::ClassReportOf(std::vector<float>{0, 1, 1}, std::vector<float>{0, 1, 0}, 2);
  BOOST_REQUIRE(store->SaveClassReport(1, 30, report.value()).ok());
  BOOST_TEST(store->FinalClassReport(1).value()->step == 30);
}

BOOST_AUTO_TEST_CASE(migrations_apply_in_order_once_each) {
  TempStoreDir dir;
  const std::string path = dir.Path("m.db");
  Database db = Database::Open(path, Database::kCreate).value();
  // Step 2 depends on step 1; re-running either would fail (the table exists, or the row's
  // primary key does).
  const Migration two[] = {{"create t", "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"},
                           {"seed t", "INSERT INTO t VALUES (1, 'a')"}};
  BOOST_REQUIRE(Migrate(db, two).ok());
  BOOST_TEST(UserVersion(db) == 2);
  Status again = Migrate(db, two);
  BOOST_TEST(again.ok(), again.message());

  const Migration three[] = {two[0], two[1], {"add t2", "CREATE TABLE t2 (x INTEGER)"}};
  BOOST_REQUIRE(Migrate(db, three).ok());
  BOOST_TEST(UserVersion(db) == 3);
  BOOST_TEST(db.QueryInt("SELECT count(*) FROM t").value() == 1);
  BOOST_TEST(TableCount(db, "t2") == 1);
}

BOOST_AUTO_TEST_CASE(a_failing_migration_rolls_back_its_step_and_names_it) {
  TempStoreDir dir;
  const std::string path = dir.Path("m.db");
  Database db = Database::Open(path, Database::kCreate).value();
  const Migration steps[] = {
      {"create t", "CREATE TABLE t (id INTEGER PRIMARY KEY)"},
      {"half done", "CREATE TABLE u (x INTEGER); INSERT INTO nowhere VALUES (1)"}};
  Status status = Migrate(db, steps);
  BOOST_REQUIRE(!status.ok());
  BOOST_TEST(Contains(status.message(), "migration 2 (half done)"), status.message());
  BOOST_TEST(Contains(status.message(), path), status.message());
  BOOST_TEST(UserVersion(db) == 1);
  BOOST_TEST(TableCount(db, "t") == 1);
  BOOST_TEST(TableCount(db, "u") == 0);
}

BOOST_AUTO_TEST_CASE(a_file_from_a_newer_dtrain_is_refused_untouched) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  OpenStore(path);
  {
    Database db = OpenRaw(path);
    BOOST_REQUIRE(db.Exec("PRAGMA user_version = 99").ok());
  }
  Result<std::unique_ptr<Store>> store = Store::Open(path);
  BOOST_REQUIRE(!store.ok());
  const std::string message = store.status().message();
  BOOST_TEST(Contains(message, path), message);
  BOOST_TEST(Contains(message, "schema version 99 is newer than this dtrain understands"), message);
  Database db = OpenRaw(path);
  BOOST_TEST(UserVersion(db) == 99);
}

BOOST_AUTO_TEST_CASE(a_file_that_is_not_a_database_is_refused) {
  TempStoreDir dir;
  const std::string path = dir.Path("junk.db");
  std::ofstream(path) << std::string(8192, 'x');
  Result<std::unique_ptr<Store>> store = Store::Open(path);
  BOOST_REQUIRE(!store.ok());
  BOOST_TEST(Contains(store.status().message(), path), store.status().message());
  BOOST_TEST(Contains(store.status().message(), "not a database"), store.status().message());

  Result<std::unique_ptr<Store>> missing = Store::Open(dir.Path("no/such/dir/dtrain.db"));
  BOOST_REQUIRE(!missing.ok());
  BOOST_TEST(Contains(missing.status().message(), "cannot open"), missing.status().message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace schema_test
}  // namespace dtrain::store
