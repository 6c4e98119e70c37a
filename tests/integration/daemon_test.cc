// dtraind end to end: real daemon processes on a temporary socket, real worker processes, the
// control protocol spoken as a client would.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <set>
#include <thread>

#include "core/data/click_synthetic.h"
#include "daemon_fixture.h"

namespace dtrain::testing {
namespace daemon_test {

using json = nlohmann::json;

constexpr const char* kQuickJob = R"(name = "quick"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 2000
test_rows = 500
features = 6
classes = 3
[model]
type = "mlp"
hidden = [16]
activation = "tanh"
[train]
epochs = 3
batch_size = 32
[optimizer]
type = "momentum"
lr = 0.05
[checkpoint]
every_steps = 50
)";

// Runs for many seconds unless stopped.
constexpr const char* kLongJob = R"(name = "long"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 20000
test_rows = 2000
features = 128
classes = 4
noise = 6.0
[model]
type = "mlp"
hidden = [256, 256]
[train]
epochs = 40
batch_size = 64
seed = 3
[optimizer]
type = "adam"
lr = 0.001
[checkpoint]
every_steps = 100
)";

std::vector<std::string> States(const json& job) {
  std::vector<std::string> out;
  for (const json& e : job["events"]) out.push_back(e["to"]);
  return out;
}

// Every line of a job's log, read through a `logs` stream.
std::vector<std::string> LogLines(const DaemonFixture& d, std::int64_t id, bool follow) {
  auto stream = net::FrameStream::ConnectUnix(d.socket(), std::chrono::seconds(5));
  BOOST_REQUIRE(stream.ok());
  const json request = {{"v", 1}, {"type", "logs"}, {"id", id}, {"follow", follow}};
  BOOST_REQUIRE(
      stream.value()
          .WriteString(net::MessageType::kControl, 0, 0, request.dump(), std::chrono::seconds(5))
          .ok());
  std::vector<std::string> lines;
  for (;;) {
    auto frame = stream.value().Read(std::chrono::seconds(120));
    BOOST_REQUIRE_MESSAGE(frame.ok(), frame.status().message());
    const json reply = json::parse(frame.value().payload);
    BOOST_REQUIRE(reply["ok"] == true);
    if (reply.contains("lines")) {
      for (const json& l : reply["lines"]) lines.push_back(l["line"]);
    }
    if (reply.contains("end")) return lines;
  }
}

BOOST_AUTO_TEST_SUITE(daemon_end_to_end)

BOOST_AUTO_TEST_CASE(submit_runs_to_success_with_metrics_checkpoints_and_every_log_line) {
  DaemonFixture d;
  const json version = d.Request({{"type", "version"}});
  BOOST_TEST(version["protocol"] == 1);
  const std::int64_t id = d.Submit(kQuickJob);
  const json job = d.Wait(id);
  BOOST_TEST(job["state"] == "succeeded");
  BOOST_TEST(job["reason"] == "completed 189 steps");
  BOOST_TEST(job["step"] == 189);
  BOOST_TEST(job["metrics"]["eval_accuracy"].get<double>() > 0.8);
  BOOST_TEST(
      (States(job) == std::vector<std::string>{"queued", "starting", "running", "succeeded"}));
  BOOST_REQUIRE(job["workers"].size() == 1u);
  BOOST_TEST(job["workers"][0]["state"] == "exited");
  BOOST_TEST(job["workers"][0]["exit_status"] == 0);

  const json checkpoints = d.Request({{"type", "checkpoints"}, {"id", id}});
  BOOST_REQUIRE(checkpoints["ok"] == true);
  BOOST_TEST(checkpoints["checkpoints"].back()["step"] == 189);
  const json metrics = d.Request({{"type", "metrics"}, {"id", id}, {"name", "eval_accuracy"}});
  BOOST_TEST(metrics["metrics"].size() == 3u);

  // The log holds the worker's lines through its very last one, then the daemon's verdict.
  const std::vector<std::string> lines = LogLines(d, id, /*follow=*/true);
  BOOST_REQUIRE(lines.size() >= 5u);
  BOOST_TEST(lines.front().rfind("training:", 0) == 0u);
  BOOST_TEST(lines[lines.size() - 2] == "completed after 189 steps");
  BOOST_TEST(lines.back() == "completed 189 steps");
}

BOOST_AUTO_TEST_CASE(an_lbfgs_job_runs_in_its_worker_and_its_end_is_the_jobs_reason) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(
      "name = \"lbfgs\"\n[data]\nformat = \"synthetic\"\nrows = 2000\ntest_rows = 500\n"
      "features = 6\nclasses = 3\nnoise = 2.0\n[model]\ntype = \"softmax\"\n"
      "[train]\nweight_decay = 0.01\neval_every = 4\n"
      "[optimizer]\ntype = \"lbfgs\"\nmax_iterations = 12\ngradient_tolerance = 0\n"
      "loss_tolerance = 0\n[checkpoint]\nevery_steps = 5\n");
  const json job = d.Wait(id);
  BOOST_TEST(job["state"] == "succeeded");
  BOOST_TEST(job["reason"] == "stopped after 12 iterations (max_iterations)");
  BOOST_TEST(job["step"] == 12);
  BOOST_TEST(job["metrics"]["eval_accuracy"].get<double>() > 0.8);
  BOOST_TEST(job["metrics"]["grad_norm"].get<double>() > 0.0);
  const json checkpoints = d.Request({{"type", "checkpoints"}, {"id", id}});
  BOOST_TEST(checkpoints["checkpoints"].back()["step"] == 12);
  const json objective = d.Request({{"type", "metrics"}, {"id", id}, {"name", "objective"}});
  BOOST_REQUIRE(objective["metrics"].size() == 12u);
  for (std::size_t i = 1; i < 12; ++i) {  // every accepted step lowers the objective
    BOOST_TEST(objective["metrics"][i]["value"].get<double>() <
               objective["metrics"][i - 1]["value"].get<double>());
  }
  const std::vector<std::string> lines = LogLines(d, id, /*follow=*/false);
  BOOST_REQUIRE(lines.size() >= 4u);
  BOOST_TEST(lines.front().find("L-BFGS, at most 12 iterations") != std::string::npos,
             lines.front());
  BOOST_TEST(lines[1].rfind("iteration 4 evaluations ", 0) == 0u, lines[1]);
}

// A sparse model trains in its worker (data.sparse): AUC and key counts are recorded, the
// checkpoint holds the touched keys, and the log ends with the worker's count of them.
BOOST_AUTO_TEST_CASE(a_sparse_job_runs_in_its_worker_and_reports_auc_and_keys) {
  DaemonFixture d;
  const data::ClickData clicks =
      data::MakeClicks({.rows = 3000, .features = 1u << 14, .nonzeros = 15, .seed = 6});
  const std::string train = d.dir().Path("clicks.svm");
  BOOST_REQUIRE(data::WriteLibsvm(clicks.rows, train).ok());
  const std::int64_t id =
      d.Submit("name = \"clicks\"\n[data]\nformat = \"libsvm\"\nsparse = true\ntrain = \"" + train +
               "\"\nvalidation_fraction = 0.2\n[model]\ntype = \"logistic\"\n"
               "[train]\nepochs = 2\nbatch_size = 40\n[optimizer]\ntype = \"ftrl\"\n"
               "alpha = 0.2\n[checkpoint]\nevery_steps = 50\n");
  const json job = d.Wait(id);
  BOOST_TEST(job["state"] == "succeeded");
  BOOST_TEST(job["reason"] == "completed 120 steps");  // 2400 rows of 40, twice
  BOOST_TEST(job["metrics"]["eval_auc"].get<double>() > 0.55);
  const double keys = job["metrics"]["model_keys"].get<double>();
  BOOST_TEST(keys > 500.0);
  const json checkpoints = d.Request({{"type", "checkpoints"}, {"id", id}});
  BOOST_TEST(checkpoints["checkpoints"].back()["step"] == 120);
  const std::vector<std::string> lines = LogLines(d, id, /*follow=*/false);
  BOOST_REQUIRE(lines.size() >= 3u);
  BOOST_TEST(lines.front().find("sparse_logistic") != std::string::npos, lines.front());
  BOOST_TEST(lines[lines.size() - 2] ==
             "completed after 120 steps, " + std::to_string(static_cast<long>(keys)) + " keys");
}

BOOST_AUTO_TEST_CASE(logs_follow_started_early_prints_every_line_until_the_end) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(kQuickJob);
  const std::vector<std::string> followed = LogLines(d, id, /*follow=*/true);
  const std::vector<std::string> all = LogLines(d, id, /*follow=*/false);
  BOOST_TEST(followed == all);
  BOOST_TEST(all.back() == "completed 189 steps");
}

BOOST_AUTO_TEST_CASE(cancel_of_a_running_job_leaves_no_process_behind) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(kLongJob);
  d.WaitForState(id, "running");
  const json reply = d.Request({{"type", "cancel"}, {"id", id}});
  BOOST_REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
  BOOST_TEST(reply["job"]["state"] == "cancelled");
  BOOST_TEST(d.WorkerProcesses().empty());
  // The worker checkpointed on SIGTERM before it exited.
  const json checkpoints = d.Request({{"type", "checkpoints"}, {"id", id}});
  BOOST_TEST(!checkpoints["checkpoints"].empty());
  const json again = d.Request({{"type", "cancel"}, {"id", id}});
  BOOST_TEST(again["ok"] == false);
  BOOST_TEST(again["code"] == "conflict");
}

BOOST_AUTO_TEST_CASE(a_daemon_killed_mid_job_resumes_it_from_the_newest_checkpoint) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(kQuickJob + std::string());  // warm-up: a finished job stays
  d.Wait(id);
  const std::int64_t long_id = d.Submit(kLongJob);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const json cps = d.Request({{"type", "checkpoints"}, {"id", long_id}});
    if (!cps["checkpoints"].empty() && cps["checkpoints"].back()["step"] >= 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  d.Stop(SIGKILL);
  // Its worker dies with it.
  const auto gone = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!d.WorkerProcesses().empty() && std::chrono::steady_clock::now() < gone) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_TEST(d.WorkerProcesses().empty());

  d.Start();
  const json resumed = d.WaitForState(long_id, "running");
  std::vector<std::string> reasons;
  for (const json& e : resumed["events"]) reasons.push_back(e["reason"]);
  BOOST_TEST(States(resumed)[3] == "recovering");
  BOOST_TEST(reasons.back().find("from the checkpoint at step") != std::string::npos);
  BOOST_TEST(d.Status(id)["state"] == "succeeded");  // finished jobs are untouched
  const json cancelled = d.Request({{"type", "cancel"}, {"id", long_id}});
  BOOST_TEST(cancelled["job"]["state"] == "cancelled");
}

BOOST_AUTO_TEST_CASE(sigterm_checkpoints_running_jobs_and_the_next_start_resumes_them) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(kLongJob);
  d.WaitForState(id, "running");
  const ProcessResult stopped = d.Stop(SIGTERM);
  BOOST_TEST(stopped.exit_code == 0, stopped.err);
  BOOST_TEST(d.WorkerProcesses().empty());
  d.Start();
  // The job may still read "running" from before the stop until the new daemon has taken it up:
  // wait for its recovery's events, not for its state.
  std::vector<std::string> states;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    states = States(d.Status(id));
    if (states.size() >= 5 && states[4] == "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_REQUIRE(states.size() >= 5u);
  BOOST_TEST((std::vector<std::string>(states.begin(), states.begin() + 5) ==
              std::vector<std::string>{"queued", "starting", "running", "recovering", "running"}));
  d.Request({{"type", "cancel"}, {"id", id}});
}

BOOST_AUTO_TEST_CASE(a_killed_worker_is_restarted_from_its_checkpoint) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(kLongJob);
  json job = d.WaitForState(id, "running");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    const json cps = d.Request({{"type", "checkpoints"}, {"id", id}});
    if (!cps["checkpoints"].empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const pid_t worker = d.Status(id)["workers"][0]["pid"].get<pid_t>();
  ::kill(worker, SIGKILL);
  const auto restarted = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < restarted) {
    job = d.Status(id);
    if (job["workers"].size() == 2u && job["state"] == "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_REQUIRE(job["workers"].size() == 2u);
  BOOST_TEST(job["workers"][0]["state"] == "killed");
  BOOST_TEST(job["workers"][0]["signal"] == SIGKILL);
  BOOST_TEST(job["restarts"] == 1);
  bool said = false;
  for (const json& e : job["events"]) {
    const std::string reason = e["reason"].get<std::string>();
    said |= reason.rfind("restart 1 of 3: worker rank 0 (pid ", 0) == 0 &&
            reason.find("killed by signal SIGKILL") != std::string::npos;
  }
  BOOST_TEST(said, job.dump());
  d.Request({{"type", "cancel"}, {"id", id}});
}

BOOST_AUTO_TEST_CASE(a_job_whose_data_is_missing_where_it_runs_fails_at_once_naming_it) {
  DaemonFixture d;
  // The data file disappears between submission and start: no restart could help.
  const std::string csv = d.dir().Write("vanishing.csv", "a,b,label\n1,2,0\n3,4,1\n");
  const std::string job =
      std::string("name = \"doomed\"\npriority = 5\n[data]\nformat = \"csv\"\n") + "train = \"" +
      csv + "\"\n[model]\ntype = \"logistic\"\n" +
      "[train]\nepochs = 1\nbatch_size = 1\n[restart]\nmax_restarts = 2\n";
  const std::int64_t id = d.Submit(job);
  std::filesystem::remove(csv);
  const json ended = d.Wait(id);
  BOOST_TEST(ended["state"] == "failed");
  const std::string reason = ended["reason"];
  BOOST_TEST(reason.starts_with("worker rank 0 (pid "), reason);
  BOOST_TEST(reason.find("vanishing.csv") != std::string::npos, reason);
  BOOST_TEST(reason.ends_with("(not restarted: it would fail the same way)"), reason);
  BOOST_TEST(ended["restarts"] == 0);
  BOOST_TEST(ended["workers"].size() == 1u);
  const std::vector<std::string> lines = LogLines(d, id, false);
  bool named = false;
  for (const std::string& l : lines) named |= l.find("vanishing.csv") != std::string::npos;
  BOOST_TEST(named);  // the worker's own error is in the log
}

BOOST_AUTO_TEST_CASE(bad_requests_get_clear_replies_and_the_daemon_keeps_serving) {
  DaemonFixture d;
  BOOST_TEST(d.Request({{"type", "launch_missiles"}})["code"] == "bad_request");
  BOOST_TEST(d.Request({{"type", "status"}})["code"] == "bad_request");
  BOOST_TEST(d.Request({{"type", "status"}, {"id", 999}})["code"] == "not_found");
  BOOST_TEST(d.Request({{"type", "status"}, {"id", "one"}})["code"] == "bad_request");
  const json invalid = d.Request(
      {{"type", "submit"}, {"job_toml", "[train]\nbatch_sise = 3\n"}, {"source", "bad.toml"}});
  BOOST_TEST(invalid["code"] == "invalid_job");
  BOOST_REQUIRE(!invalid["diagnostics"].empty());
  bool did_you_mean = false;
  for (const json& diag : invalid["diagnostics"]) {
    did_you_mean |= diag["key"] == "train.batch_sise" && diag["line"] == 2;
  }
  BOOST_TEST(did_you_mean, invalid.dump());

  // Raw abuse: garbage, a frame claiming 4 GiB, a wrong version, a non-JSON payload. Each costs
  // only its own connection.
  auto send_raw = [&](const std::string& bytes) {
    auto stream = net::FrameStream::ConnectUnix(d.socket(), std::chrono::seconds(5));
    BOOST_REQUIRE(stream.ok());
    ::send(stream.value().fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
    return stream.value().Read(std::chrono::seconds(10));
  };
  BOOST_TEST(!send_raw("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + std::string(32, 'x')).ok());
  std::string huge = net::EncodeFrame(net::MessageType::kControl, 0, net::kNoSender, 0, "{}");
  huge[24] = huge[25] = huge[26] = huge[27] = static_cast<char>(0xff);  // length 2^32-1
  BOOST_TEST(!send_raw(huge).ok());
  std::string other_version =
      net::EncodeFrame(net::MessageType::kControl, 0, net::kNoSender, 0, "{}");
  other_version[4] = 9;
  auto mismatch = send_raw(other_version);
  BOOST_REQUIRE(mismatch.ok());
  BOOST_TEST((mismatch.value().header.type == net::MessageType::kVersionMismatch));
  BOOST_TEST(
      !send_raw(net::EncodeFrame(net::MessageType::kControl, 0, net::kNoSender, 0, "not json"))
           .ok());
  // A client that sends a header, then a byte a second, is closed within the request deadline,
  // while another client is served meanwhile.
  {
    auto slow = net::FrameStream::ConnectUnix(d.socket(), std::chrono::seconds(5));
    BOOST_REQUIRE(slow.ok());
    const std::string frame =
        net::EncodeFrame(net::MessageType::kControl, 0, net::kNoSender, 0, std::string(1000, ' '));
    const auto started = std::chrono::steady_clock::now();
    bool closed = false;
    for (std::size_t i = 0; i < net::kHeaderSize + 20 && !closed; ++i) {  // 20 s at most
      const std::size_t n = i == 0 ? net::kHeaderSize : 1;  // the header, then byte by byte
      closed = ::send(slow.value().fd(), frame.data() + i, n, MSG_NOSIGNAL) < 0;
      i += n - 1;
      BOOST_TEST(d.Request({{"type", "version"}})["ok"] == true);
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    const double held =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    BOOST_TEST(closed, "the daemon still reads a request dribbled for " << held << " s");
    BOOST_TEST_MESSAGE("a dribbling client was closed after " << held << " s");
  }
  // A worker impostor with a wrong token is refused.
  const json impostor =
      d.Request({{"type", "worker_hello"}, {"job", 1}, {"rank", 0}, {"token", "guess"}});
  BOOST_TEST(impostor["code"] == "denied");

  // Still serving.
  const std::int64_t id = d.Submit(kQuickJob);
  BOOST_TEST(d.Wait(id)["state"] == "succeeded");
}

BOOST_AUTO_TEST_CASE(a_hundred_concurrent_clients_see_no_error_and_no_duplicate) {
  DaemonFixture d({"--max-jobs", "1"});
  constexpr int kClients = 100;
  std::atomic<int> errors{0};
  std::vector<std::int64_t> ids(kClients);
  std::vector<std::string> failures(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      const auto submitted =
          d.TryRequest({{"type", "submit"}, {"job_toml", kQuickJob}, {"source", "c.toml"}});
      if (!submitted || (*submitted)["ok"] != true) {
        ++errors;
        failures[c] = submitted ? submitted->dump() : "no reply";
        return;
      }
      ids[c] = (*submitted)["job"]["id"].get<std::int64_t>();
      for (const json& request :
           {json{{"type", "status"}, {"id", ids[c]}}, json{{"type", "list"}, {"limit", 5}},
            json{{"type", "cancel"}, {"id", ids[c]}}}) {
        const auto reply = d.TryRequest(request);
        // cancel may find the job already finished: a clean "conflict" is not an error.
        if (!reply || ((*reply)["ok"] != true && (*reply)["code"] != "conflict")) {
          ++errors;
          failures[c] = reply ? reply->dump() : "no reply to " + request.dump();
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  for (const std::string& f : failures) {
    if (!f.empty()) BOOST_TEST_MESSAGE(f);
  }
  BOOST_TEST(errors.load() == 0);
  BOOST_TEST(std::set<std::int64_t>(ids.begin(), ids.end()).size() ==
             static_cast<std::size_t>(kClients));
  const json list = d.Request({{"type", "list"}, {"limit", 1000}});
  BOOST_TEST(list["jobs"].size() == static_cast<std::size_t>(kClients));
  for (const json& job : list["jobs"]) {
    const std::string state = job["state"];
    BOOST_TEST((state == "cancelled" || state == "succeeded"), state);
  }
}

BOOST_AUTO_TEST_CASE(the_queue_runs_by_priority_then_order_and_says_why_a_job_waits) {
  DaemonFixture d({"--max-jobs", "1"});
  const std::int64_t running = d.Submit(kLongJob);
  d.WaitForState(running, "running");
  const std::int64_t low = d.Submit(kQuickJob, 0);
  const std::int64_t high = d.Submit(kQuickJob, 10);
  const json waiting = d.Status(low);
  BOOST_TEST(waiting["state"] == "queued");
  BOOST_TEST(waiting["reason"] == "waiting behind job " + std::to_string(high), waiting.dump());
  BOOST_TEST(d.Status(high)["reason"] == "waiting for a job slot (max_jobs = 1)");
  d.Request({{"type", "cancel"}, {"id", running}});
  const json first = d.Wait(high);
  const json second = d.Wait(low);
  BOOST_TEST(first["state"] == "succeeded");
  BOOST_TEST(second["state"] == "succeeded");
  // The high-priority job started (and so ended) first although submitted later.
  BOOST_TEST(first["workers"][0]["started"].get<double>() <
             second["workers"][0]["started"].get<double>());
}

BOOST_AUTO_TEST_CASE(only_the_owner_or_root_may_cancel_a_job) {
  TempDir dir;
  const std::string config = dir.Write("dtraind.toml", "[daemon]\nsocket_mode = \"0666\"\n");
  DaemonFixture d({"--config", config});
  ::chmod(d.dir().path().c_str(), 0755);
  const std::int64_t id = d.Submit(kLongJob);  // owned by this test's uid (root in CI)
  d.WaitForState(id, "running");
  // Another user (nobody) asks to cancel it, from a child process that dropped privileges.
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const auto reply = d.TryRequest({{"type", "cancel"}, {"id", id}});
    ::_exit(reply && (*reply)["code"] == "denied" ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (::getuid() == 0) {
    BOOST_TEST(WEXITSTATUS(status) == 0);  // denied
    BOOST_TEST(d.Status(id)["state"] == "running");
  }
  BOOST_TEST(d.Status(id)["owner"] == ::getuid());
  BOOST_TEST(d.Request({{"type", "cancel"}, {"id", id}})["job"]["state"] == "cancelled");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace daemon_test
}  // namespace dtrain::testing
