// The daemon-facing subcommands through the real binary: against a fake daemon (fake_daemon.h)
// for their requests, output and exit codes; with no daemon at all for the "unreachable"
// message and exit code 3; and with --db store files for "not found", exit code 4.
#include <signal.h>
#include <stdlib.h>

#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "config/job_file.h"
#include "core/model/model.h"
#include "core/train/model_file.h"
#include "daemon/runner/job_data.h"
#include "daemon/store/checkpoint.h"
#include "daemon/store/store.h"
#include "fake_daemon.h"

namespace dtrain::cli {
namespace daemon_commands_test {

using dtrain::testing::FakeDaemon;
using dtrain::testing::ProcessResult;
using dtrain::testing::RunProcess;
using dtrain::testing::SendJson;
using dtrain::testing::StartProcess;
using dtrain::testing::TempDir;
using nlohmann::json;
using Cases = std::vector<std::vector<std::string>>;

constexpr const char* kJob = R"(name = "blobs"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 200
test_rows = 50
features = 6
classes = 3
[model]
type = "mlp"
hidden = [8]
[train]
epochs = 1
batch_size = 32
[cluster]
workers = 2
mode = "sync"
)";

std::string Bin() {
  const char* bin = std::getenv("DTRAIN_BIN");
  BOOST_REQUIRE_MESSAGE(bin != nullptr, "DTRAIN_BIN is not set (run through ctest)");
  return bin;
}

// Sets an environment variable for the processes the test starts; restores it afterwards.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      ::unsetenv(name_);
    } else {
      ::setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

json Worker(int rank, const std::string& state) {
  return {{"rank", rank},
          {"role", "replica"},
          {"host", "node1"},
          {"pid", 4000 + rank},
          {"state", state},
          {"exit_status", state == "running" ? json() : json(0)},
          {"signal", nullptr},
          {"started", 1764511400.0},
          {"ended", state == "running" ? json() : json(1764511500.0)}};
}

// A JOB object as the protocol describes it.
json JobObject(std::int64_t id, const std::string& state, const std::string& reason = "") {
  return {
      {"id", id},
      {"name", "blobs"},
      {"state", state},
      {"reason", reason},
      {"owner", 0},
      {"priority", 5},
      {"created", 1764511392.0},
      {"updated", 1764511500.0},
      {"step", 120},
      {"total_steps", 480},
      {"steps_per_sec", 2.5},
      {"eta_seconds", state == "running" ? json(144.0) : json(nullptr)},
      {"epoch", 1},
      {"epoch_rows", 1920},
      {"rows_per_epoch", 7680},
      {"restarts", 1},
      {"best_step", 100},
      {"best_value", 0.875},
      {"best_metric", "eval_accuracy"},
      {"metrics", {{"eval_accuracy", 0.875}, {"train_loss", 0.25}, {"bytes_sent", 2048.0}}},
      {"workers", {Worker(0, "running"), Worker(1, "running")}},
      {"events",
       {{{"time", 1764511392.0}, {"from", nullptr}, {"to", "queued"}, {"reason", "submitted"}},
        {{"time", 1764511393.0}, {"from", "queued"}, {"to", "starting"}, {"reason", "scheduled"}},
        {{"time", 1764511400.0},
         {"from", "starting"},
         {"to", "running"},
         {"reason", "2 workers started"}}}}};
}

json Error(const std::string& code, const std::string& text) {
  return {{"ok", false}, {"code", code}, {"error", text}};
}

json Line(std::int64_t id, int worker, const std::string& stream, const std::string& text) {
  return {
      {"id", id}, {"worker", worker}, {"stream", stream}, {"time", 1764511401.0}, {"line", text}};
}

// The resolved job file and a checkpoint of its model, as the daemon would hold them.
struct StoredModel {
  std::string spec_toml;
  store::CheckpointData checkpoint;
};

StoredModel MakeStoredModel(const TempDir& dir) {
  config::LoadResult loaded = config::LoadJobFile(dir.Write("model-job.toml", kJob), {});
  BOOST_REQUIRE(loaded.ok());
  auto data = runner::LoadJobData(*loaded.job);
  BOOST_REQUIRE(data.ok());
  StoredModel out;
  out.spec_toml = config::FormatResolvedJob(*loaded.job);
  out.checkpoint.step = 96;
  out.checkpoint.model_spec = model::FormatModelSpec(data.value().spec);
  const std::size_t n = model::Model(data.value().spec).NumParams();
  out.checkpoint.params = math::FloatBuffer(n);
  for (std::size_t i = 0; i < n; ++i)
    out.checkpoint.params.data()[i] = 0.001f * static_cast<float>(i);
  return out;
}

// Answers every request type of the protocol with canned data. Job ids: 7 runs (2 workers);
// 1 ended succeeded, 2 failed, 3 cancelled; 8 never ends (its `wait` gets no reply); 5 has
// already ended (cancel: conflict); 99 does not exist. submit creates job 42, which fails.
FakeDaemon::Handler CannedDaemon(const StoredModel* model) {
  return [model](const json& request, net::FrameStream& s) {
    const std::string type = request.value("type", "");
    const std::int64_t id = request.value("id", std::int64_t{0});
    if (id == 99) {
      SendJson(s, Error("not_found", "no job 99"));
    } else if (type == "version") {
      SendJson(s, {{"ok", true}, {"version", "0.1.0"}, {"protocol", 1}, {"pid", 4242}});
    } else if (type == "status") {
      SendJson(s, {{"ok", true}, {"job", JobObject(id, "running", "2 workers started")}});
    } else if (type == "list") {
      json jobs = json::array();
      for (int i : {7, 3}) {
        json job = JobObject(i, i == 7 ? "running" : "cancelled", "by the owner");
        job.erase("events");
        jobs.push_back(job);
      }
      SendJson(s, {{"ok", true}, {"jobs", jobs}});
    } else if (type == "wait") {
      if (id == 8) return;
      const char* state = id == 1 ? "succeeded" : id == 2 ? "failed" : "cancelled";
      SendJson(s, {{"ok", true}, {"job", JobObject(id, state, "worker 1 exited with status 3")}});
    } else if (type == "cancel") {
      if (id == 5) {
        SendJson(s, Error("conflict", "job 5 has already ended (succeeded)"));
      } else {
        SendJson(s, {{"ok", true}, {"job", JobObject(id, "running", "cancel requested")}});
      }
    } else if (type == "logs") {
      SendJson(
          s,
          {{"lines",
            {Line(1, 0, "stdout", "epoch 1 loss 0.9"), Line(2, 1, "stdout", "epoch 1 loss 0.8")}}});
      SendJson(s, {{"lines", {Line(3, 1, "stderr", "warning: slow disk")}}});
      SendJson(s,
               {{"end", true}, {"job", JobObject(id, id == 42 ? "failed" : "succeeded", "done")}});
    } else if (type == "submit") {
      const std::string text = request.value("job_toml", "");
      if (text.find("noise = 9") != std::string::npos) {
        SendJson(s, {{"ok", false},
                     {"code", "invalid_job"},
                     {"error", "job.toml: 1 problem"},
                     {"diagnostics",
                      {{{"file", "job.toml"},
                        {"line", 3},
                        {"column", 1},
                        {"key", "data.noise"},
                        {"message", "too noisy for this daemon"}}}}});
      } else {
        SendJson(s, {{"ok", true}, {"job", JobObject(42, "queued", "submitted")}});
      }
    } else if (type == "metrics") {
      json rows = json::array();
      for (int step = 10; step <= 100; step += 10) {
        rows.push_back({{"step", step},
                        {"epoch", step / 100.0},
                        {"worker", 0},
                        {"name", "train_loss"},
                        {"value", 1.0 / step},
                        {"time", 1764511400.0}});
        rows.push_back({{"step", step},
                        {"epoch", step / 100.0},
                        {"worker", 0},
                        {"name", "lr"},
                        {"value", 0.01},
                        {"time", 1764511400.0}});
      }
      SendJson(s, {{"ok", true}, {"metrics", rows}});
    } else if (type == "settings") {
      if (id == 3) {
        SendJson(s, Error("denied",
                          "job 3 belongs to uid 1001; only its owner or root may read the "
                          "settings of it"));
      } else {
        const std::string lr = id == 7 ? "0.1" : "0.01";
        SendJson(
            s, {{"ok", true},
                {"spec_toml", "name = \"blobs\"\n[optimizer]\nlr = " + lr + "\ntype = \"sgd\"\n"}});
      }
    } else if (type == "checkpoints") {
      SendJson(
          s,
          {{"ok", true},
           {"checkpoints",
            {{{"step", 50}, {"time", 1764511450.0}, {"bytes", 3 << 20}, {"checksum", 0x1a2b3c4d}},
             {{"step", 100}, {"time", 1764511500.0}, {"bytes", 2048}, {"checksum", 7}}}}});
    } else if (type == "checkpoint" && model != nullptr) {
      SendJson(s,
               {{"ok", true}, {"step", model->checkpoint.step}, {"spec_toml", model->spec_toml}});
      (void)s.WriteString(net::MessageType::kCheckpoint, 0, 0,  // unchecked, as SendJson
                          store::EncodeCheckpoint(model->checkpoint), std::chrono::seconds(5));
    } else {
      SendJson(s, Error("bad_request", "unknown request type '" + type + "'"));
    }
  };
}

struct Daemon {
  TempDir dir;
  FakeDaemon daemon{dir.Path("dtraind.sock"), CannedDaemon(nullptr)};

  ProcessResult Run(std::vector<std::string> args) {
    args.insert(args.begin(), {Bin(), "--socket", daemon.socket()});
    return RunProcess(args, dir.Path(""));
  }
};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

BOOST_AUTO_TEST_SUITE(daemon_commands)

BOOST_AUTO_TEST_CASE(status_shows_state_reason_workers_metrics_and_events) {
  Daemon d;
  const ProcessResult r = d.Run({"status", "7"});
  BOOST_TEST(r.exit_code == 0, r.err);
  for (const char* part :
       {"job 7", "blobs", "running: 2 workers started", "priority  5",
        "step      120/480 (25%), 2.5 steps/s, ETA 2m24s",
        "epoch     2, 1920 of its 7680 rows (25%)", "restarts  1",
        "best      eval_accuracy 0.875 at step 100", "eval_accuracy 0.875", "train_loss 0.25",
        "RANK", "replica", "4001", "scheduled", "queued", "2 workers started"}) {
    BOOST_TEST(Contains(r.out, part), "missing '" << part << "' in:\n" << r.out);
  }
  // A window counter is labelled as one: not among the metrics, which read as values.
  BOOST_TEST(Contains(r.out, "  window    bytes_sent 2.0 KiB  (one worker's last "
                             "train.log_every steps, not totals)"), r.out);
  BOOST_TEST(!Contains(r.out.substr(0, r.out.find("  window")), "bytes_sent"), r.out);
  BOOST_TEST(r.out.find("\033[") == std::string::npos);  // no colour off a terminal
  const json request = d.daemon.Requests().at(0);
  BOOST_TEST(request["type"] == "status");
  BOOST_TEST(request["id"] == 7);
  BOOST_TEST(request["v"] == 1);
}

BOOST_AUTO_TEST_CASE(json_prints_the_daemons_job_object_unchanged) {
  Daemon d;
  const ProcessResult r = d.Run({"status", "7", "--json"});
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(json::parse(r.out) == JobObject(7, "running", "2 workers started"));
  const ProcessResult cancelled = d.Run({"cancel", "7", "--json"});
  BOOST_TEST(cancelled.exit_code == 0, cancelled.err);
  BOOST_TEST(json::parse(cancelled.out) == JobObject(7, "running", "cancel requested"));
  const ProcessResult waited = d.Run({"wait", "1", "--json"});
  BOOST_TEST(waited.exit_code == 0, waited.err);
  BOOST_TEST(json::parse(waited.out) == JobObject(1, "succeeded", "worker 1 exited with status 3"));
}

BOOST_AUTO_TEST_CASE(status_without_a_job_and_list_print_the_recent_jobs) {
  Daemon d;
  const Cases cases = {{"status"}, {"list", "--state", "running", "--limit", "5"}};
  for (const std::vector<std::string>& args : cases) {
    const ProcessResult r = d.Run(args);
    BOOST_TEST(r.exit_code == 0, r.err);
    BOOST_TEST(Contains(r.out, "ID"));
    BOOST_TEST(Contains(r.out, "STATE"));
    BOOST_TEST(Contains(r.out, "cancelled"));
    BOOST_TEST(Contains(r.out, "by the owner"));
    BOOST_TEST(Contains(r.out, "METRIC"));
    BOOST_TEST(Contains(r.out, "120/480 (25%)"), r.out);
    BOOST_TEST(Contains(r.out, "eval_accuracy 0.875"), r.out);
  }
  const auto requests = d.daemon.Requests();
  BOOST_TEST(requests.at(0)["type"] == "list");
  BOOST_TEST(requests.at(1)["state"] == "running");
  BOOST_TEST(requests.at(1)["limit"] == 5);
  const ProcessResult as_json = d.Run({"list", "--json"});
  BOOST_TEST(as_json.exit_code == 0, as_json.err);
  BOOST_TEST(json::parse(as_json.out).size() == 2u);
  BOOST_TEST(json::parse(as_json.out)[0]["id"] == 7);
  const ProcessResult bad_state = d.Run({"list", "--state", "sleeping"});
  BOOST_TEST(bad_state.exit_code == 2);
}

BOOST_AUTO_TEST_CASE(wait_exits_with_the_jobs_result) {
  Daemon d;
  const ProcessResult ok = d.Run({"wait", "1"});
  BOOST_TEST(ok.exit_code == 0, ok.err);
  BOOST_TEST(Contains(ok.out, "job 1 (blobs) succeeded"), ok.out);
  const ProcessResult failed = d.Run({"wait", "2"});
  BOOST_TEST(failed.exit_code == 1);
  BOOST_TEST(Contains(failed.out, "failed at step 120: worker 1 exited with status 3"), failed.out);
  const ProcessResult cancelled = d.Run({"wait", "3"});
  BOOST_TEST(cancelled.exit_code == 130);
}

BOOST_AUTO_TEST_CASE(ctrl_c_stops_waiting_with_130_and_the_job_keeps_running) {
  Daemon d;
  auto child = StartProcess({Bin(), "--socket", d.daemon.socket(), "wait", "8"}, d.dir.Path(""));
  BOOST_REQUIRE(d.daemon.WaitForRequests(1));
  child.Signal(SIGINT);
  const ProcessResult r = child.Wait();
  BOOST_TEST(r.exit_code == 130, r.err);
  BOOST_TEST(Contains(r.err, "job 8; it keeps running"), r.err);
}

BOOST_AUTO_TEST_CASE(an_error_reply_keeps_its_message_and_maps_to_an_exit_code) {
  Daemon d;
  const Cases cases = {{"status", "99"},
                       {"cancel", "99"},
                       {"wait", "99"},
                       {"logs", "99"},
                       {"metrics", "99"},
                       {"checkpoints", "99"},
                       {"export", "99", "-o", "x.dtm"}};
  for (const std::vector<std::string>& args : cases) {
    BOOST_TEST_CONTEXT(args.front()) {
      const ProcessResult r = d.Run(args);
      BOOST_TEST(r.exit_code == 4);
      BOOST_TEST(Contains(r.err, "no job 99"), r.err);
    }
  }
  const ProcessResult conflict = d.Run({"cancel", "5"});
  BOOST_TEST(conflict.exit_code == 1);
  BOOST_TEST(Contains(conflict.err, "already ended"), conflict.err);
}

BOOST_AUTO_TEST_CASE(logs_follow_prints_every_line_with_ranks_when_several_workers) {
  Daemon d;
  const ProcessResult r = d.Run({"logs", "7", "-f", "--tail", "10", "--since", "1h"});
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(r.out == "r0: epoch 1 loss 0.9\nr1: epoch 1 loss 0.8\n");
  BOOST_TEST(Contains(r.err, "r1: warning: slow disk"), r.err);
  const json request = d.daemon.Requests().back();
  BOOST_TEST(request["type"] == "logs");
  BOOST_TEST(request["follow"] == true);
  BOOST_TEST(request["tail"] == 10);
  BOOST_TEST(request["since"].get<double>() > 1.7e9);
  BOOST_TEST(!request.contains("worker"));

  const ProcessResult one = d.Run({"logs", "7", "--worker", "1"});
  BOOST_TEST(one.exit_code == 0, one.err);
  BOOST_TEST(Contains(one.out, "\nepoch 1 loss 0.8\n"), one.out);  // no prefix for one rank
  BOOST_TEST(d.daemon.Requests().back()["worker"] == 1);
  BOOST_TEST(d.daemon.Requests().back()["follow"] == false);

  const ProcessResult bad = d.Run({"logs", "7", "--since", "yesterday-ish"});
  BOOST_TEST(bad.exit_code == 2);
  BOOST_TEST(Contains(bad.err, "--since"), bad.err);
}

BOOST_AUTO_TEST_CASE(submit_sends_the_resolved_job_then_follows_it_to_its_result) {
  Daemon d;
  const std::string job = d.dir.Write("job.toml", kJob);
  const ProcessResult queued =
      d.Run({"submit", job, "--name", "renamed", "--priority", "9", "--no-wait"});
  BOOST_TEST(queued.exit_code == 0, queued.err);
  BOOST_TEST(queued.out == "42\n");
  const json request = d.daemon.Requests().back();
  BOOST_TEST(request["type"] == "submit");
  BOOST_TEST(request["name"] == "renamed");
  BOOST_TEST(request["priority"] == 9);
  BOOST_TEST(request["source"] == job);
  config::LoadResult expected = config::LoadJobFile(job, {"name=renamed", "priority=9"});
  BOOST_REQUIRE(expected.ok());
  BOOST_TEST(request["job_toml"] == config::FormatResolvedJob(*expected.job));

  const ProcessResult as_json = d.Run({"submit", job, "--no-wait", "--json"});
  BOOST_TEST(as_json.exit_code == 0, as_json.err);
  BOOST_TEST(json::parse(as_json.out) == JobObject(42, "queued", "submitted"));

  // By default it follows the logs and exits with the job's result (job 42 fails).
  const ProcessResult followed = d.Run({"submit", job});
  BOOST_TEST(followed.exit_code == 1, followed.err);
  BOOST_TEST(Contains(followed.err, "submitted job 42"), followed.err);
  BOOST_TEST(Contains(followed.out, "r1: epoch 1 loss 0.8\n"), followed.out);
  BOOST_TEST(Contains(followed.out, "job 42 (blobs) failed"), followed.out);
  BOOST_TEST(d.daemon.Requests().back()["follow"] == true);
}

BOOST_AUTO_TEST_CASE(submit_of_an_invalid_job_prints_the_diagnostics_and_never_connects) {
  Daemon d;
  const std::string bad = d.dir.Write("bad.toml", "name = \"x\"\n[train]\nbatch_sise = 64\n");
  const ProcessResult r = d.Run({"submit", bad});
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(Contains(r.err, "bad.toml:3:1: train.batch_sise"), r.err);
  BOOST_TEST(d.daemon.Connections() == 0);
  const ProcessResult bad_priority =
      d.Run({"submit", d.dir.Write("job.toml", kJob), "--priority", "1000"});
  BOOST_TEST(bad_priority.exit_code == 2);
  BOOST_TEST(Contains(bad_priority.err, "priority"), bad_priority.err);
  BOOST_TEST(d.daemon.Connections() == 0);

  const ProcessResult nowhere =
      RunProcess({Bin(), "submit", bad, "--socket", d.dir.Path("none.sock")}, d.dir.Path(""));
  BOOST_TEST(nowhere.exit_code == 2);
  BOOST_TEST(!Contains(nowhere.err, "reachable"), nowhere.err);
  BOOST_TEST(Contains(nowhere.err, "batch_sise"), nowhere.err);
}

// submit runs validate's data checks, as the submitter, before it connects: the same message
// and exit status for each job validate refuses.
BOOST_AUTO_TEST_CASE(submit_refuses_every_job_validate_refuses_with_the_same_message) {
  Daemon d;
  d.dir.Write("houses.csv", "rooms,area,price\n3,70,1\n4,90,2\n2,50,0\n");
  d.dir.Write("fractional.csv", "rooms,area,price\n3,70,1\n4,90,2.5\n");
  d.dir.Write("narrow.csv", "rooms,price\n3,1\n");
  const std::string head = "[data]\nformat = \"csv\"\ntrain = \"";
  const struct {
    std::string job, said;
  } cases[] = {
      {head + "houses.csv\"\nlabel_column = \"Price\"\n",
       d.dir.Path("houses.csv") + ": data.label_column is 'Price', which the header line does not "
                                  "name; its columns: rooms, area, price (did you mean 'price'?)"},
      {head + "fractional.csv\"\nlabel_column = \"price\"\n",
       d.dir.Path("fractional.csv") + ": line 3, column 3"},
      {head + "houses.csv\"\ntest = \"narrow.csv\"\n",
       d.dir.Path("narrow.csv") + " has 1 features but " + d.dir.Path("houses.csv") + " has 2"}};
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.job) {
      const std::string job = d.dir.Write("job.toml", c.job);
      const ProcessResult validated = RunProcess({Bin(), "validate", job}, d.dir.Path(""));
      const ProcessResult submitted = d.Run({"submit", job, "--no-wait"});
      BOOST_TEST(validated.exit_code == 2);
      BOOST_TEST(submitted.exit_code == 2);
      BOOST_TEST(Contains(validated.err, c.said), validated.err);
      BOOST_TEST(submitted.err == validated.err);
    }
  }
  BOOST_TEST(d.daemon.Connections() == 0);
}

// --name and --priority are overrides underneath; their problems are said as theirs.
BOOST_AUTO_TEST_CASE(a_bad_name_or_priority_is_blamed_on_its_option) {
  Daemon d;
  const std::string job = d.dir.Write("job.toml", kJob);
  const ProcessResult named = d.Run({"submit", job, "--name", "lr=0.01"});
  BOOST_TEST(named.exit_code == 2);
  BOOST_TEST(Contains(named.err, "--name: must be 1 to 64 letters"), named.err);
  BOOST_TEST(!Contains(named.err, "--set"), named.err);
  const ProcessResult prioritised = d.Run({"submit", job, "--priority", "1000"});
  BOOST_TEST(prioritised.exit_code == 2);
  BOOST_TEST(Contains(prioritised.err, "--priority: must be"), prioritised.err);
  // A name given with --set is still the override's.
  const ProcessResult set = d.Run({"submit", job, "--set", "name=\"a b\""});
  BOOST_TEST(Contains(set.err, "--set: name: must be"), set.err);
  BOOST_TEST(d.daemon.Connections() == 0);
}

BOOST_AUTO_TEST_CASE(a_job_the_daemon_refuses_shows_its_diagnostics_and_exits_2) {
  Daemon d;
  const std::string noisy = d.dir.Write("noisy.toml", kJob);
  const ProcessResult r = d.Run({"submit", noisy, "--set", "data.noise=9", "--no-wait"});
  BOOST_TEST(r.exit_code == 2, r.err);
  BOOST_TEST(Contains(r.err, "job.toml:3:1: data.noise: too noisy for this daemon"), r.err);
}

BOOST_AUTO_TEST_CASE(metrics_from_the_daemon_as_csv_json_and_a_plot) {
  Daemon d;
  const ProcessResult csv = d.Run({"metrics", "7", "--name", "loss", "--format", "csv"});
  BOOST_TEST(csv.exit_code == 0, csv.err);
  BOOST_TEST(csv.out.rfind("step,epoch,worker,name,value,time\n", 0) == 0u);
  BOOST_TEST(Contains(csv.out, "100,1.000000,0,train_loss,0.01,"), csv.out);
  BOOST_TEST(!Contains(csv.out, ",lr,"));
  BOOST_TEST(d.daemon.Requests().back()["name"] == "loss");

  const ProcessResult as_json = d.Run({"metrics", "7", "--format", "json"});
  BOOST_TEST(json::parse(as_json.out).size() == 20u);

  ScopedEnv lang("LANG", "C");
  ScopedEnv lc_all("LC_ALL", nullptr);
  ScopedEnv lc_ctype("LC_CTYPE", nullptr);
  const ProcessResult plot = d.Run({"metrics", "7", "--plot"});
  BOOST_TEST(plot.exit_code == 0, plot.err);
  BOOST_TEST(Contains(plot.out, "train_loss: 10 points, steps 10..100"), plot.out);
  BOOST_TEST(Contains(plot.out, "lr: 10 points"), plot.out);
  BOOST_TEST(Contains(plot.out, "  0.1 |*"), plot.out);  // max at the top left
  BOOST_TEST(Contains(plot.out, "0.01 |"), plot.out);
  BOOST_TEST(plot.out.find("\033[") == std::string::npos);
  BOOST_TEST(d.Run({"metrics", "7", "--plot", "--format", "csv"}).exit_code == 2);

  // A name no metric has is an error listing the job's metrics, not an empty table.
  const ProcessResult typo = d.Run({"metrics", "7", "--name", "lss"});
  BOOST_TEST(typo.exit_code == 2);
  BOOST_TEST(typo.out.empty(), typo.out);
  BOOST_TEST(Contains(typo.err, "job 7 has no metric whose name contains 'lss'; its metrics: lr, "
                                "train_loss (did you mean --name loss?)"),
             typo.err);
}

BOOST_AUTO_TEST_CASE(compare_from_the_daemon_reads_each_jobs_status_metrics_and_settings) {
  Daemon d;
  const ProcessResult r = d.Run({"compare", "7", "1", "--name", "train_loss", "--json"});
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_REQUIRE(json::accept(r.out));
  const json c = json::parse(r.out);
  BOOST_TEST(c["goal"] == "min");
  BOOST_TEST(c["differing"] == json::parse(R"({"optimizer.lr": [0.1, 0.01]})"));
  BOOST_REQUIRE(c["jobs"].size() == 2u);
  BOOST_TEST(c["jobs"][0]["id"] == 7);
  BOOST_TEST(c["jobs"][0]["state"] == "running");
  BOOST_TEST(c["jobs"][0]["steps"] == 120);
  BOOST_TEST(c["jobs"][0]["final"] == 0.01);  // 1/100, the last step's
  BOOST_TEST(c["jobs"][0]["best_step"] == 100);
  std::vector<std::string> types;
  for (const json& request : d.daemon.Requests()) {
    types.push_back(request.value("type", ""));
    if (types.back() == "metrics") BOOST_TEST(request["name"] == "train_loss");
  }
  BOOST_TEST((types == std::vector<std::string>{"status", "metrics", "settings", "status",
                                                "metrics", "settings"}));

  // Another user's job: the daemon refuses its settings, and compare says so.
  const ProcessResult denied = d.Run({"compare", "7", "3", "--name", "train_loss"});
  BOOST_TEST(denied.exit_code == 1);
  BOOST_TEST(Contains(denied.err, "only its owner or root may read the settings of it"),
             denied.err);
  BOOST_TEST(d.Run({"compare", "7", "99", "--name", "train_loss"}).exit_code == 4);
}

BOOST_AUTO_TEST_CASE(checkpoints_from_the_daemon) {
  Daemon d;
  const ProcessResult r = d.Run({"checkpoints", "7"});
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(Contains(r.out, "STEP"));
  BOOST_TEST(Contains(r.out, "3.0 MiB"), r.out);
  BOOST_TEST(Contains(r.out, "0x1a2b3c4d"), r.out);
  const ProcessResult as_json = d.Run({"checkpoints", "7", "--json"});
  BOOST_TEST(as_json.exit_code == 0, as_json.err);
  const json rows = json::parse(as_json.out);
  BOOST_TEST(rows.size() == 2u);
  BOOST_TEST(rows[0]["checksum"] == "0x1a2b3c4d");
  BOOST_TEST(rows[1]["bytes"] == 2048);
}

BOOST_AUTO_TEST_CASE(export_from_the_daemon_writes_the_checkpoints_model) {
  TempDir dir;
  const StoredModel model = MakeStoredModel(dir);
  FakeDaemon daemon(dir.Path("dtraind.sock"), CannedDaemon(&model));
  const std::string out = dir.Path("model.dtm");
  const ProcessResult r = RunProcess(
      {Bin(), "export", "7", "--step", "96", "-o", out, "--socket", daemon.socket()}, dir.Path(""));
  BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
  BOOST_TEST(Contains(r.out, "wrote " + out), r.out);
  BOOST_TEST(daemon.Requests().back()["type"] == "checkpoint");
  BOOST_TEST(daemon.Requests().back()["step"] == 96);
  auto file = train::ReadModelFile(out);
  BOOST_TEST_REQUIRE(file.ok(), file.status().message());
  BOOST_TEST(file.value().step == 96);
  BOOST_TEST(file.value().job_name == "blobs");
  BOOST_TEST_REQUIRE(file.value().params.size() == model.checkpoint.params.size());
  for (std::size_t i = 0; i < model.checkpoint.params.size(); ++i) {
    BOOST_TEST(file.value().params.data()[i] == model.checkpoint.params.data()[i]);
  }
}

BOOST_AUTO_TEST_CASE(version_names_the_daemon_when_one_answers) {
  Daemon d;
  const ProcessResult r = d.Run({"version"});
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(Contains(r.out, "dtrain 0.1.0"), r.out);
  BOOST_TEST(Contains(r.out, "daemon: dtraind 0.1.0 (protocol 1, pid 4242"), r.out);
  const ProcessResult as_json = d.Run({"version", "--json"});
  BOOST_TEST(json::parse(as_json.out)["daemon"]["pid"] == 4242);
}

BOOST_AUTO_TEST_CASE(the_socket_comes_from_the_option_either_side_the_environment_or_the_user_dir) {
  Daemon d;
  BOOST_TEST(
      RunProcess({Bin(), "status", "7", "--socket", d.daemon.socket()}, d.dir.Path("")).exit_code ==
      0);
  {
    ScopedEnv env("DTRAIN_SOCKET", d.daemon.socket().c_str());
    BOOST_TEST(RunProcess({Bin(), "status", "7"}, d.dir.Path("")).exit_code == 0);
  }
  // The user socket: $XDG_RUNTIME_DIR/dtrain/dtraind.sock.
  TempDir runtime;
  std::filesystem::create_directory(runtime.Path("dtrain"));
  FakeDaemon user(runtime.Path("dtrain/dtraind.sock"), CannedDaemon(nullptr));
  ScopedEnv no_env("DTRAIN_SOCKET", nullptr);
  ScopedEnv xdg("XDG_RUNTIME_DIR", runtime.path().c_str());
  BOOST_TEST(RunProcess({Bin(), "status", "7"}, d.dir.Path("")).exit_code == 0);
  BOOST_TEST(user.Requests().size() == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(without_a_daemon)

BOOST_AUTO_TEST_CASE(every_daemon_command_exits_3_naming_the_socket) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", kJob);
  const std::string socket = dir.Path("nobody-here.sock");
  const Cases cases = {{"submit", job},      {"status"},
                       {"status", "1"},      {"list"},
                       {"cancel", "1"},      {"wait", "1"},
                       {"logs", "1", "-f"},  {"metrics", "1"},
                       {"checkpoints", "1"}, {"export", "1", "-o", "m.dtm"}};
  for (const std::vector<std::string>& args : cases) {
    BOOST_TEST_CONTEXT(args.front()) {
      std::vector<std::string> argv = {Bin(), "--socket", socket};
      argv.insert(argv.end(), args.begin(), args.end());
      const ProcessResult r = RunProcess(argv, dir.Path(""));
      BOOST_TEST(r.exit_code == 3);
      BOOST_TEST(Contains(r.err, socket), r.err);
      BOOST_TEST(Contains(r.err, "dtraind --socket"), r.err);
      BOOST_TEST(Contains(r.err, "dtrain run"), r.err);
      BOOST_TEST(r.out.empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(the_default_sockets_are_all_named) {
  TempDir dir;
  ScopedEnv no_env("DTRAIN_SOCKET", nullptr);
  ScopedEnv xdg("XDG_RUNTIME_DIR", dir.path().c_str());
  if (std::filesystem::exists("/run/dtrain/dtraind.sock")) return;  // a real daemon here
  const ProcessResult r = RunProcess({Bin(), "list"}, dir.Path(""));
  BOOST_TEST(r.exit_code == 3);
  BOOST_TEST(Contains(r.err, dir.Path("dtrain/dtraind.sock")), r.err);
  BOOST_TEST(Contains(r.err, "/run/dtrain/dtraind.sock"), r.err);
  BOOST_TEST(Contains(r.err, "systemctl start dtraind"), r.err);
}

BOOST_AUTO_TEST_CASE(version_without_a_daemon_says_so_and_succeeds) {
  TempDir dir;
  const ProcessResult r =
      RunProcess({Bin(), "version", "--socket", dir.Path("none.sock")}, dir.Path(""));
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(Contains(r.out, "daemon: not running"), r.out);
  const ProcessResult as_json =
      RunProcess({Bin(), "--socket", dir.Path("none.sock"), "version", "--json"}, dir.Path(""));
  BOOST_TEST(as_json.exit_code == 0);
  BOOST_TEST(json::parse(as_json.out)["daemon"].is_null());
  BOOST_TEST(json::parse(as_json.out)["client"]["version"] == "0.1.0");
  // The kernel set named is the one the process runs: OPENBLAS_CORETYPE, when set, decides it.
  const ProcessResult haswell = RunProcess({"/usr/bin/env", "OPENBLAS_CORETYPE=Haswell", Bin(),
                                            "--socket", dir.Path("none.sock"), "version", "--json"},
                                           dir.Path(""));
  BOOST_TEST(json::parse(haswell.out)["client"]["blas"] == "Haswell", haswell.out);
  const ProcessResult text = RunProcess(
      {"/usr/bin/env", "OPENBLAS_CORETYPE=Haswell", Bin(), "version", "--socket",
       dir.Path("none.sock")},
      dir.Path(""));
  BOOST_TEST(Contains(text.out, "(protocol 1, OpenBLAS kernels Haswell)"), text.out);
  // What runs the matrix products: DTRAIN_GEMM, else oneDNN where it has AVX-512 kernels, which
  // need these four (oneDNN's avx512_core; no DNNL_MAX_CPU_ISA here).
  const auto gemm = [&](const std::string& setting) {
    const ProcessResult v =
        RunProcess({"/usr/bin/env", "-u", "DTRAIN_GEMM", "-u", "DNNL_MAX_CPU_ISA", setting, Bin(),
                    "--socket", dir.Path("none.sock"), "version", "--json"},
                   dir.Path(""));
    return json::parse(v.out)["client"]["gemm"].get<std::string>();
  };
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line) && !line.starts_with("flags")) {
  }
  const auto has = [&](const std::string& flag) { return Contains(line + " ", " " + flag + " "); };
  const bool avx512 = has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq");
  BOOST_TEST(gemm("DTRAIN_GEMM=") == (avx512 ? "onednn" : "openblas"), line);
  BOOST_TEST(gemm("DTRAIN_GEMM=auto") == (avx512 ? "onednn" : "openblas"));
  BOOST_TEST(gemm("DTRAIN_GEMM=openblas") == "openblas");
  BOOST_TEST(gemm("DTRAIN_GEMM=onednn") == "onednn");
  const ProcessResult said =
      RunProcess({"/usr/bin/env", "DTRAIN_GEMM=openblas", "OPENBLAS_CORETYPE=Haswell", Bin(),
                  "version", "--socket", dir.Path("none.sock")},
                 dir.Path(""));
  BOOST_TEST(
      Contains(said.out, "matrix products: OpenBLAS, Haswell kernels (DTRAIN_GEMM=openblas)"),
      said.out);
}

BOOST_AUTO_TEST_CASE(a_job_missing_from_a_store_file_exits_4_and_no_daemon_is_asked) {
  TempDir dir;
  const std::string db = dir.Path("empty.db");
  BOOST_REQUIRE(store::Store::Open(db).ok());
  const std::string nowhere = dir.Path("none.sock");  // would be exit 3 if it were tried
  const Cases cases = {{"metrics", "99", "--db", db},
                       {"checkpoints", "99", "--db", db},
                       {"export", "99", "--db", db, "-o", "m.dtm"},
                       {"run", "--resume", "99", "--db", db},
                       {"status", "99", "--db", db},
                       {"logs", "99", "--db", db},
                       {"list", "--db", dir.Path("missing.db")},
                       {"metrics", "1", "--db", dir.Path("missing.db")}};
  for (const std::vector<std::string>& args : cases) {
    BOOST_TEST_CONTEXT(args.front() << " " << args.back()) {
      std::vector<std::string> argv = {Bin(), "--socket", nowhere};
      argv.insert(argv.end(), args.begin(), args.end());
      const ProcessResult r = RunProcess(argv, dir.Path(""));
      BOOST_TEST(r.exit_code == 4);
      BOOST_TEST((Contains(r.err, "99") || Contains(r.err, "missing.db")), r.err);
    }
  }
  BOOST_TEST(!std::filesystem::exists(dir.Path("missing.db")));  // never created by a read
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace daemon_commands_test
}  // namespace dtrain::cli
