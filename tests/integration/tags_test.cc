// Tags through a real dtraind and the real CLI: the job file's `tags` and `submit --tag` kept with
// the job, `list --tag` showing only the jobs that carry every tag named, `status` (human and
// --json) and `list --json` showing them; a bad --tag refused before anything is submitted; and
// `dtrain run --tag` into a store file read back by `list --db --tag`.
#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/process.h"
#include "integration/daemon_fixture.h"

namespace dtrain::testing {
namespace tags_test {

using json = nlohmann::json;

// One step of a tiny model: each job ends at once.
std::string Job(const std::string& tags) {
  return "name = \"tagged\"\ntags = " + tags + R"(
[data]
format = "synthetic"
rows = 200
test_rows = 50
features = 4
classes = 2
[model]
type = "softmax"
[train]
steps = 1
batch_size = 16
threads = 1
)";
}

ProcessResult Dtrain(const DaemonFixture& d, std::vector<std::string> args) {
  args.insert(args.begin(), {EnvPath("DTRAIN_BIN"), "--socket", d.socket()});
  return RunProcess(args, d.dir().Path(""));
}

// The ids of `dtrain list --json` with `args` added, in the order listed.
std::vector<std::int64_t> ListedIds(const DaemonFixture& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"list", "--json"});
  const ProcessResult listed = Dtrain(d, args);
  BOOST_REQUIRE_MESSAGE(listed.exit_code == 0, listed.err);
  std::vector<std::int64_t> ids;
  for (const json& job : json::parse(listed.out)) ids.push_back(job["id"].get<std::int64_t>());
  return ids;
}

// `dtrain submit FILE --no-wait --json` with `args` added: the job's id.
std::int64_t Submitted(const DaemonFixture& d, const std::string& file,
                       std::vector<std::string> args) {
  args.insert(args.begin(), {"submit", file, "--no-wait", "--json"});
  const ProcessResult submitted = Dtrain(d, args);
  BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);
  return json::parse(submitted.out)["id"].get<std::int64_t>();
}

BOOST_AUTO_TEST_SUITE(tags)

BOOST_AUTO_TEST_CASE(submitted_tags_are_kept_listed_by_and_shown) {
  DaemonFixture d;
  const std::string sweep = d.dir().Write("sweep.toml", Job(R"(["lr-sweep", "baseline"])"));
  const std::string plain = d.dir().Write("plain.toml", Job("[]"));
  const std::int64_t a = Submitted(d, sweep, {});
  const std::int64_t b = Submitted(d, sweep, {"--tag", "v2", "--tag", "best.run"});
  const std::int64_t c = Submitted(d, plain, {"--tag", "v2"});
  for (const std::int64_t id : {a, b, c}) d.Wait(id);

  using Ids = std::vector<std::int64_t>;
  BOOST_TEST(ListedIds(d, {"--tag", "lr-sweep"}) == (Ids{b, a}), boost::test_tools::per_element());
  BOOST_TEST(ListedIds(d, {"--tag", "v2"}) == (Ids{c, b}), boost::test_tools::per_element());
  BOOST_TEST(ListedIds(d, {"--tag", "v2", "--tag", "baseline"}) == (Ids{b}),
             boost::test_tools::per_element());
  BOOST_TEST(ListedIds(d, {"--tag", "nothing"}).empty());
  BOOST_TEST(ListedIds(d, {}) == (Ids{c, b, a}), boost::test_tools::per_element());
  // The tags with each listed job, the file's first, then --tag's, in order.
  const json listed = json::parse(Dtrain(d, {"list", "--json", "--tag", "best.run"}).out);
  BOOST_REQUIRE(listed.size() == 1u);
  BOOST_TEST(listed[0]["tags"] == json({"lr-sweep", "baseline", "v2", "best.run"}), listed.dump());

  const ProcessResult status = Dtrain(d, {"status", std::to_string(b), "--json"});
  BOOST_REQUIRE_MESSAGE(status.exit_code == 0, status.err);
  BOOST_TEST(json::parse(status.out)["tags"] == json({"lr-sweep", "baseline", "v2", "best.run"}));
  BOOST_TEST(json::parse(Dtrain(d, {"status", std::to_string(c), "--json"}).out)["tags"] ==
             json({"v2"}));
  const ProcessResult human = Dtrain(d, {"status", std::to_string(b)});
  BOOST_TEST(
      human.out.find("\n  tags      lr-sweep, baseline, v2, best.run\n") != std::string::npos,
      human.out);
  // The request itself: tags must be a list of strings.
  const json refused = d.Request({{"type", "list"}, {"tags", "v2"}});
  BOOST_TEST(refused["ok"] == false, refused.dump());
  BOOST_TEST(refused["code"] == "bad_request", refused.dump());
  const ProcessResult none = Dtrain(d, {"list", "--tag", "nothing"});
  BOOST_TEST(none.exit_code == 0);
  BOOST_TEST(none.err.find("no jobs tagged nothing") != std::string::npos, none.err);
}

BOOST_AUTO_TEST_CASE(a_bad_tag_is_refused_before_anything_is_submitted) {
  DaemonFixture d;
  const std::string sweep = d.dir().Write("sweep.toml", Job(R"(["baseline"])"));
  const ProcessResult twice = Dtrain(d, {"submit", sweep, "--no-wait", "--tag", "baseline"});
  BOOST_TEST(twice.exit_code == 2, twice.err);
  BOOST_TEST(
      twice.err.find("--tag: tags: \"baseline\" is a tag of the job already") != std::string::npos,
      twice.err);
  const ProcessResult spaced = Dtrain(d, {"submit", sweep, "--no-wait", "--tag", "a b"});
  BOOST_TEST(spaced.exit_code == 2, spaced.err);
  BOOST_TEST(spaced.err.find("--tag: tags: must be 1 to 64 letters") != std::string::npos,
             spaced.err);
  const std::string bad = d.dir().Write("bad.toml", Job(R"(["x", "x"])"));
  const ProcessResult duplicate = Dtrain(d, {"submit", bad, "--no-wait"});
  BOOST_TEST(duplicate.exit_code == 2, duplicate.err);
  BOOST_TEST(
      duplicate.err.find("bad.toml:2:14: tags: tag 2 \"x\" is given twice") != std::string::npos,
      duplicate.err);
  BOOST_TEST(ListedIds(d, {}).empty());
}

BOOST_AUTO_TEST_CASE(a_foreground_run_keeps_its_tags_in_its_store_file) {
  DaemonFixture d;  // for its folder; `run` needs no daemon
  const std::string file = d.dir().Write("job.toml", Job(R"(["local"])"));
  const std::string db = d.dir().Path("runs.db");
  const ProcessResult run = RunProcess(
      {EnvPath("DTRAIN_BIN"), "run", file, "--db", db, "--tag", "mine"}, d.dir().Path(""));
  BOOST_REQUIRE_MESSAGE(run.exit_code == 0, run.err);
  const ProcessResult listed = RunProcess(
      {EnvPath("DTRAIN_BIN"), "list", "--db", db, "--json", "--tag", "mine", "--tag", "local"},
      d.dir().Path(""));
  BOOST_REQUIRE_MESSAGE(listed.exit_code == 0, listed.err);
  const json jobs = json::parse(listed.out);
  BOOST_REQUIRE(jobs.size() == 1u);
  BOOST_TEST(jobs[0]["tags"] == json({"local", "mine"}), listed.out);
  const ProcessResult other = RunProcess(
      {EnvPath("DTRAIN_BIN"), "list", "--db", db, "--json", "--tag", "other"}, d.dir().Path(""));
  BOOST_TEST(json::parse(other.out).empty(), other.out);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace tags_test
}  // namespace dtrain::testing
