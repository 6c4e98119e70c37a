// A resolved job file flattened to dotted keys, and the keys in which several jobs differ: only
// those whose values are not all equal, a key some jobs lack among them (nullopt for those jobs),
// arrays kept whole; text that is not TOML is an error naming its source.
#include "config/job_settings.h"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "config/job_file.h"

namespace dtrain::config {
namespace job_settings_test {

JobSettings Flat(const std::string& text) {
  Result<JobSettings> flat = FlattenJobText(text, "job 1");
  BOOST_REQUIRE_MESSAGE(flat.ok(), flat.status().message());
  return std::move(flat).value();
}

BOOST_AUTO_TEST_SUITE(job_settings)

BOOST_AUTO_TEST_CASE(tables_become_dotted_keys_and_arrays_stay_whole) {
  const JobSettings s = Flat(
      "name = \"a\"\n[model]\nhidden = [256, 128]\n[optimizer]\nlr = 0.01\ntype = "
      "\"adam\"\n[cluster.slurm]\nqos = \"low\"\n");
  BOOST_TEST(s.size() == 5u);
  BOOST_TEST(s.at("name").toml == "\"a\"");
  BOOST_TEST(s.at("model.hidden").toml == "[256, 128]");
  BOOST_TEST(s.at("model.hidden").json == "[256, 128]");
  BOOST_TEST(s.at("optimizer.lr").toml == "0.01");
  BOOST_TEST(s.at("optimizer.type").json == "\"adam\"");
  BOOST_TEST(s.at("cluster.slurm.qos").toml == "\"low\"");
}

BOOST_AUTO_TEST_CASE(each_table_of_an_array_of_tables_is_a_level_by_its_index) {
  const JobSettings s =
      Flat("[[model.layers]]\ntype = \"dense\"\nunits = 8\n[[model.layers]]\ntype = \"relu\"\n");
  BOOST_TEST(s.size() == 3u);
  BOOST_TEST(s.at("model.layers.0.units").toml == "8");
  BOOST_TEST(s.at("model.layers.1.type").toml == "\"relu\"");
}

BOOST_AUTO_TEST_CASE(only_keys_whose_values_differ_are_kept_a_missing_key_differs) {
  const std::vector<JobSettings> jobs = {
      Flat("[optimizer]\nlr = 0.01\ntype = \"sgd\"\n[train]\nbatch_size = 32\n"),
      Flat("[optimizer]\nlr = 0.1\ntype = \"sgd\"\n[train]\nbatch_size = 32\nseed = 4\n"),
      Flat("[optimizer]\nlr = 0.01\ntype = \"sgd\"\n[train]\nbatch_size = 32\n")};
  const auto differing = DifferingSettings(jobs);
  BOOST_REQUIRE(differing.size() == 2u);
  const auto& lr = differing.at("optimizer.lr");
  BOOST_REQUIRE(lr.size() == 3u);
  BOOST_TEST(lr[0]->toml == "0.01");
  BOOST_TEST(lr[1]->toml == "0.1");
  BOOST_TEST(lr[2]->toml == "0.01");
  const auto& seed = differing.at("train.seed");
  BOOST_TEST(!seed[0].has_value());
  BOOST_TEST(seed[1]->toml == "4");
  BOOST_TEST(!seed[2].has_value());
  // The same settings: nothing differs; one job: nothing to differ from.
  BOOST_TEST(DifferingSettings(std::vector<JobSettings>{jobs[0], jobs[2]}).empty());
  BOOST_TEST(DifferingSettings(std::vector<JobSettings>{jobs[1]}).empty());
}

BOOST_AUTO_TEST_CASE(a_resolved_job_file_flattens_to_every_key_it_writes) {
  LoadResult loaded = ParseJobText(
      "[data]\nformat = \"synthetic\"\nrows = 64\n[optimizer]\nlr = 0.25\n", "j.toml", {}, "/");
  BOOST_REQUIRE(loaded.ok());
  const JobSettings s = Flat(FormatResolvedJob(*loaded.job));
  BOOST_TEST(s.at("optimizer.lr").toml == "0.25");
  BOOST_TEST(s.at("data.rows").toml == "64");
  BOOST_TEST(s.count("train.batch_size") == 1u);  // a default, written out
}

BOOST_AUTO_TEST_CASE(text_that_is_not_toml_is_an_error_naming_its_source) {
  Result<JobSettings> flat = FlattenJobText("[optimizer\nlr = 1\n", "job 7's job file");
  BOOST_REQUIRE(!flat.ok());
  BOOST_TEST(flat.status().message().find("job 7's job file:1:") == 0u, flat.status().message());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace job_settings_test
}  // namespace dtrain::config
