// The best model table: one row a job, replaced whole on each improvement, verified on load,
// deleted with the job; and the best model frame that carries it from a worker.
#include <boost/test/unit_test.hpp>
#include <string>

#include "daemon/store/store.h"
#include "daemon/store/store_test_util.h"

namespace dtrain::store {
namespace best_model_test {

using testing::Contains;
using testing::OpenRaw;
using testing::OpenStore;
using testing::RunningJob;
using testing::SameBits;
using testing::SampleCheckpoint;
using testing::TempStoreDir;

// A best model: the checkpoint's parameters alone, as the trainer hands them over.
CheckpointData SampleModel(std::int64_t step) {
  CheckpointData model = SampleCheckpoint(step, 64);
  model.optimizer_state.clear();
  return model;
}

BOOST_AUTO_TEST_SUITE(store_best_model)

BOOST_AUTO_TEST_CASE(a_job_without_one_has_none) {
  TempStoreDir dir;
  auto store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t id = RunningJob(*store, "none");
  BOOST_TEST(!store->BestModel(id).value().has_value());
  BOOST_TEST(!store->LoadBestModel(id).value().has_value());
}

BOOST_AUTO_TEST_CASE(each_save_replaces_the_one_before) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  auto store = OpenStore(path);
  const std::int64_t id = RunningJob(*store, "best");
  const std::int64_t other = RunningJob(*store, "other");
  const CheckpointData first = SampleModel(100);
  BOOST_REQUIRE(
      store->SaveBestModel(id, {.step = 100, .metric = "eval_loss", .value = 0.5}, ViewOf(first))
          .ok());
  const CheckpointData second = SampleModel(300);
  BOOST_REQUIRE(
      store->SaveBestModel(id, {.step = 300, .metric = "eval_loss", .value = 0.25}, ViewOf(second))
          .ok());
  const std::optional<BestModelInfo> info = store->BestModel(id).value();
  BOOST_REQUIRE(info.has_value());
  BOOST_TEST(info->step == 300);
  BOOST_TEST(info->metric == "eval_loss");
  BOOST_TEST(info->value == 0.25);
  BOOST_TEST(info->time > 0);
  const std::optional<CheckpointData> loaded = store->LoadBestModel(id).value();
  BOOST_REQUIRE(loaded.has_value());
  BOOST_TEST(SameBits(*loaded, second));
  BOOST_TEST(OpenRaw(path).QueryInt("SELECT count(*) FROM best_models").value() == 1);
  BOOST_TEST(!store->BestModel(other).value().has_value());
}

// A run resumed from a checkpoint older than its best judges anew: a worse model it calls an
// improvement leaves the stored one alone; one judged by another metric replaces it.
BOOST_AUTO_TEST_CASE(a_worse_one_never_replaces_the_stored_best) {
  TempStoreDir dir;
  auto store = OpenStore(dir.Path("dtrain.db"));
  const std::int64_t id = RunningJob(*store, "resumed");
  const CheckpointData best = SampleModel(500);
  BOOST_REQUIRE(
      store->SaveBestModel(id, {.step = 500, .metric = "eval_accuracy", .value = 0.9}, ViewOf(best))
          .ok());
  for (const double worse : {0.8, 0.9}) {
    const CheckpointData later = SampleModel(400);
    BOOST_REQUIRE(store
                      ->SaveBestModel(id, {.step = 400, .metric = "eval_accuracy", .value = worse},
                                      ViewOf(later))
                      .ok());
    BOOST_TEST(store->BestModel(id).value()->step == 500);
    BOOST_TEST(SameBits(*store->LoadBestModel(id).value(), best));
  }
  const CheckpointData by_loss = SampleModel(600);
  BOOST_REQUIRE(
      store->SaveBestModel(id, {.step = 600, .metric = "eval_loss", .value = 3.0}, ViewOf(by_loss))
          .ok());
  BOOST_TEST(store->BestModel(id).value()->metric == "eval_loss");
  BOOST_TEST(store->BestModel(id).value()->step == 600);
}

BOOST_AUTO_TEST_CASE(a_damaged_one_is_an_error_naming_it) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  auto store = OpenStore(path);
  const std::int64_t id = RunningJob(*store, "damaged");
  const CheckpointData model = SampleModel(40);
  BOOST_REQUIRE(
      store
          ->SaveBestModel(id, {.step = 40, .metric = "eval_accuracy", .value = 0.75}, ViewOf(model))
          .ok());
  BOOST_REQUIRE(OpenRaw(path).Exec("UPDATE best_models SET checksum = checksum + 1").ok());
  Result<std::optional<CheckpointData>> loaded = store->LoadBestModel(id);
  BOOST_REQUIRE(!loaded.ok());
  BOOST_TEST(Contains(loaded.status().message(), "best model"), loaded.status().message());
}

BOOST_AUTO_TEST_CASE(it_is_deleted_with_its_job) {
  TempStoreDir dir;
  const std::string path = dir.Path("dtrain.db");
  auto store = OpenStore(path);
  const std::int64_t id = RunningJob(*store, "deleted");
  const CheckpointData model = SampleModel(10);
  BOOST_REQUIRE(
      store->SaveBestModel(id, {.step = 10, .metric = "eval_loss", .value = 1.0}, ViewOf(model))
          .ok());
  BOOST_REQUIRE(store->SetJobState(id, JobState::kCancelled, "test").ok());
  BOOST_REQUIRE(store->DeleteJob(id).ok());
  BOOST_TEST(OpenRaw(path).QueryInt("SELECT count(*) FROM best_models").value() == 0);
}

BOOST_AUTO_TEST_CASE(a_job_that_does_not_exist_keeps_none) {
  TempStoreDir dir;
  auto store = OpenStore(dir.Path("dtrain.db"));
  const CheckpointData model = SampleModel(10);
  Status saved =
      store->SaveBestModel(99, {.step = 10, .metric = "eval_loss", .value = 1.0}, ViewOf(model));
  BOOST_TEST(!saved.ok());
  BOOST_TEST(Contains(saved.message(), "job 99"), saved.message());
}

BOOST_AUTO_TEST_CASE(the_frame_carries_the_value_and_the_model) {
  const CheckpointData model = SampleModel(70);
  Result<BestModelFrame> back = DecodeBestModelFrame(EncodeBestModelFrame(0.125, ViewOf(model)));
  BOOST_REQUIRE(back.ok());
  BOOST_TEST(back.value().value == 0.125);
  BOOST_TEST(SameBits(back.value().model, model));
  BOOST_TEST(!DecodeBestModelFrame("1234").ok());
  std::string damaged = EncodeBestModelFrame(0.125, ViewOf(model));
  damaged[20] ^= 1;
  BOOST_TEST(!DecodeBestModelFrame(damaged).ok());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace best_model_test
}  // namespace dtrain::store
