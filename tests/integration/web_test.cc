// dtraind's HTTP listener ([daemon] http): /metrics in Prometheus's text format, checked by
// `promtool check metrics` (Debian's prometheus package) and against `dtrain status --json` of a
// running job; the bearer token a listener with http_token_file demands; the request heads
// the listener accepts or refuses; and the sweep pages' streams: a sweep submitted through the
// daemon listed, its leaderboard that of `dtrain sweep status --json`, each trial's curve capped.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/process.h"
#include "common/temp_dir.h"
#include "daemon/server/dashboard_views.h"
#include "daemon/server/http_message.h"
#include "daemon/store/store.h"
#include "integration/daemon_fixture.h"
#include "integration/http_client.h"
#include "integration/sweep_job.h"

namespace dtrain::testing {
namespace web_test {

using json = nlohmann::json;

// name{labels} -> value of every sample line.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    const std::string value = line.substr(space + 1);
    out[line.substr(0, space)] = value == "NaN" ? std::nan("") : std::stod(value);
  }
  return out;
}

// A token file holding `secret`, mode 0600 as dtraind requires.
std::string TokenFile(const TempDir& dir, const std::string& secret) {
  const std::string path = dir.Write("http.token", secret + "\n");
  ::chmod(path.c_str(), 0600);
  return path;
}

std::string HttpConfig(const TempDir& dir, std::uint16_t port, const std::string& token) {
  std::string text = "[daemon]\nhttp = \"127.0.0.1:" + std::to_string(port) + "\"\n";
  if (!token.empty()) text += "http_token_file = \"" + token + "\"\n";
  return dir.Write("d.toml", text);
}

// A server-sent event stream read as a browser's EventSource would: each event's name and data,
// with the wall time it arrived.
class EventStream {
 public:
  struct Event {
    std::string name;
    json data;
    double arrived = 0.0;  // unix seconds
  };

  EventStream(std::uint16_t port, const std::string& target, const std::string& extra = "") {
    fd_ = SendRequest(port, "GET " + target + " HTTP/1.1\r\nHost: localhost\r\n" + extra + "\r\n");
  }
  ~EventStream() { ::close(fd_); }

  const std::string& head() const { return head_; }

  // The next event, or nullopt when none came within `timeout` (or the stream ended).
  std::optional<Event> Next(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      if (std::optional<Event> e = Parse()) return e;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buffer[65536];
      const ssize_t n = ::read(fd_, buffer, sizeof buffer);
      if (n <= 0) return std::nullopt;
      buffer_.append(buffer, static_cast<std::size_t>(n));
    }
  }

 private:
  std::optional<Event> Parse() {
    if (head_.empty()) {
      const std::size_t end = buffer_.find("\r\n\r\n");
      if (end == std::string::npos) return std::nullopt;
      head_ = buffer_.substr(0, end + 4);
      buffer_.erase(0, end + 4);
    }
    for (;;) {
      const std::size_t end = buffer_.find("\n\n");
      if (end == std::string::npos) return std::nullopt;
      const std::string block = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      if (block.starts_with(":")) continue;  // a keep-alive comment
      Event e;
      std::istringstream lines(block);
      for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("event: ")) e.name = line.substr(7);
        if (line.starts_with("data: ")) e.data = json::parse(line.substr(6));
      }
      e.arrived = std::chrono::duration<double>(
                      std::chrono::system_clock::now().time_since_epoch()).count();
      return e;
    }
  }

  int fd_ = -1;
  std::string head_;
  std::string buffer_;
};

BOOST_AUTO_TEST_SUITE(web_listener)

BOOST_AUTO_TEST_CASE(metrics_pass_promtool_and_match_status_of_a_running_job) {
  TempDir config_dir;
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", HttpConfig(config_dir, port, "")});
  const std::int64_t id = d.Submit(
      "name = \"watched\"\n[data]\nformat = \"synthetic\"\nrows = 20000\n"
      "[train]\nepochs = 1000000\nbatch_size = 16\nlog_every = 200\neval_every = 1000\n");
  json job = d.WaitForStep(id, 1000);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  // Hold the worker still so that the store does not move between the two reads.
  const pid_t worker = job["workers"][0]["pid"].get<pid_t>();
  ::kill(worker, SIGSTOP);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its last rows committed
  const std::string response = Get(port, "/metrics");
  job = d.Status(id);
  ::kill(worker, SIGCONT);

  BOOST_TEST(StatusCode(response) == 200, response);
  BOOST_TEST(response.find("Content-Type: text/plain; version=0.0.4") != std::string::npos);
  const std::string text = Body(response);
  const std::map<std::string, double> samples = Samples(text);
  const std::string labels = "{job=\"" + std::to_string(id) + "\",name=\"watched\"}";
  BOOST_TEST(samples.at("dtrain_jobs{state=\"running\"}") == 1.0, text);
  BOOST_TEST(samples.at("dtrain_queue_length") == 0.0);
  BOOST_TEST(samples.at("dtrain_job_step" + labels) == job["step"].get<double>(), text);
  BOOST_TEST(samples.at("dtrain_job_restarts_total" + labels) == job["restarts"].get<double>());
  BOOST_TEST(samples.at("dtrain_job_loss" + labels) == job["metrics"]["train_loss"].get<double>());
  BOOST_TEST(samples.at("dtrain_job_eval_accuracy" + labels) ==
             job["metrics"]["eval_accuracy"].get<double>());
  const double rate = job["metrics"]["samples_per_sec"].get<double>();
  BOOST_TEST(samples.at("dtrain_job_samples_per_second" + labels) == rate);
  BOOST_TEST(samples.at("dtrain_job_steps_per_second" + labels) == rate / 16,
             boost::test_tools::tolerance(1e-12));
  BOOST_TEST(samples.at("dtrain_store_size_bytes") > 0.0);

  // promtool (Debian's prometheus package, installed by scripts/install-deps) lints the names,
  // types, HELP lines and syntax.
  BOOST_REQUIRE_MESSAGE(std::filesystem::exists("/usr/bin/promtool"),
                        "promtool is missing: scripts/install-deps installs the prometheus package");
  const std::string scraped = config_dir.Write("scraped.txt", text);
  const ProcessResult lint =
      RunProcess({"/bin/sh", "-c", "/usr/bin/promtool check metrics < " + scraped}, config_dir.Path(""));
  BOOST_TEST(lint.exit_code == 0, lint.out << lint.err);
  BOOST_TEST(lint.out.empty(), lint.out);  // no lint complaints either

  d.Request({{"type", "cancel"}, {"id", id}});
  d.Wait(id);
}

BOOST_AUTO_TEST_CASE(a_token_file_makes_every_request_bear_it) {
  TempDir config_dir;
  const std::string secret = std::string(64, 'a');
  const std::string token = TokenFile(config_dir, secret);
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", HttpConfig(config_dir, port, token)});
  const std::string none = Get(port, "/metrics");
  BOOST_TEST(StatusCode(none) == 401, none);
  BOOST_TEST(none.find("WWW-Authenticate: Bearer") != std::string::npos, none);
  BOOST_TEST(Body(none).find("dtrain_") == std::string::npos);
  BOOST_TEST(StatusCode(Get(port, "/metrics", "Authorization: Bearer " + std::string(64, 'b') +
                                                  "\r\n")) == 401);
  const std::string good = Get(port, "/metrics", "Authorization: Bearer " + secret + "\r\n");
  BOOST_TEST(StatusCode(good) == 200, good);
  BOOST_TEST(Body(good).find("dtrain_build_info") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(bad_requests_are_answered_and_closed_and_the_listener_goes_on) {
  TempDir config_dir;
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", HttpConfig(config_dir, port, "")});
  BOOST_TEST(StatusCode(HttpExchange(port, "hello\r\n\r\n")) == 400);
  BOOST_TEST(StatusCode(HttpExchange(port, "POST /metrics HTTP/1.1\r\n\r\n")) == 405);
  BOOST_TEST(StatusCode(Get(port, "/nothing")) == 404);
  BOOST_TEST(StatusCode(HttpExchange(port, "GET /metrics HTTP/1.1\r\nX: " +
                                               std::string(9000, 'x') + "\r\n\r\n")) == 431);
  const std::string head = HttpExchange(port, "HEAD /metrics HTTP/1.1\r\n\r\n");
  BOOST_TEST(StatusCode(head) == 200);
  BOOST_TEST(Body(head).empty());
  BOOST_TEST(StatusCode(Get(port, "/metrics")) == 200);  // still serving
  BOOST_TEST(d.Request({{"type", "version"}})["ok"] == true);
}

BOOST_AUTO_TEST_CASE(the_dashboard_is_served_from_the_binary_at_the_url_of_the_ready_line) {
  TempDir config_dir;
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", HttpConfig(config_dir, port, "")});
  const std::string page = Get(port, "/");
  BOOST_TEST(StatusCode(page) == 200, page);
  BOOST_TEST(page.find("Content-Type: text/html; charset=utf-8") != std::string::npos);
  BOOST_TEST(page.find("Content-Security-Policy: default-src 'self'") != std::string::npos);
  BOOST_TEST(Body(page).find("<main id=\"view\">") != std::string::npos);
  const std::string app = Get(port, "/assets/app.js");
  BOOST_TEST(StatusCode(app) == 200);
  BOOST_TEST(Body(app).find("new EventSource(") != std::string::npos);
  const std::string chart = Get(port, "/assets/chart.min.js");  // Debian's Chart.js, built in
  BOOST_TEST(StatusCode(chart) == 200);
  BOOST_TEST(Body(chart).size() > 100000u);
  BOOST_TEST(StatusCode(Get(port, "/api/stream?job=abc")) == 400);
  // Without a token a job's page shows no settings: its job file names its data files.
  const std::int64_t id = d.Submit("name = \"plain\"\n[data]\nformat = \"synthetic\"\nrows = 200\n"
                                   "[train]\nepochs = 1\n");
  EventStream stream(port, "/api/stream?job=" + std::to_string(id), "");
  std::optional<EventStream::Event> job_event = stream.Next(std::chrono::seconds(5));
  while (job_event && job_event->name != "job") job_event = stream.Next(std::chrono::seconds(5));
  BOOST_REQUIRE(job_event.has_value());
  BOOST_TEST(job_event->data["name"] == "plain");
  BOOST_TEST(!job_event->data.contains("settings"), job_event->data.dump());
  // The ready line says where the dashboard is.
  const ProcessResult stopped = d.Stop(SIGTERM);
  const std::string url = "dashboard http://127.0.0.1:" + std::to_string(port) + "/,";
  BOOST_TEST(stopped.err.find("dtraind ready: socket ") != std::string::npos, stopped.err);
  BOOST_TEST(stopped.err.find(url) != std::string::npos, stopped.err);
}

// A running job's page stream: its charts' points advance and a line the worker prints arrives
// within 2 s; a listener with a token signs a browser in with a cookie.
BOOST_AUTO_TEST_CASE(a_running_jobs_stream_advances_and_carries_its_log_lines_within_2_s) {
  TempDir config_dir;
  const std::string secret = std::string(48, 'c');
  const std::string token = TokenFile(config_dir, secret);
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", HttpConfig(config_dir, port, token)});

  const std::string signed_in = Get(port, "/?token=" + secret);
  BOOST_TEST(StatusCode(signed_in) == 303, signed_in);
  BOOST_TEST(signed_in.find("Set-Cookie: dtrain_token=" + secret + "; Path=/; HttpOnly; SameSite=Strict") !=
             std::string::npos, signed_in);
  BOOST_TEST(StatusCode(Get(port, "/?token=wrong")) == 401);
  const std::string cookie = "Cookie: theme=dark; dtrain_token=" + secret + "\r\n";
  BOOST_TEST(StatusCode(Get(port, "/", cookie)) == 200);

  const std::int64_t id = d.Submit(
      "name = \"streamed\"\n[data]\nformat = \"synthetic\"\nrows = 20000\n"
      "[train]\nepochs = 1000000\nbatch_size = 16\nlog_every = 2000\neval_every = 2000\n"
      "[cluster]\nworkers = 2\nmode = \"sync\"\n");
  BOOST_REQUIRE(d.WaitForStep(id, 1)["state"] == "running");
  EventStream stream(port, "/api/stream?job=" + std::to_string(id), cookie);
  std::int64_t first_step = -1, last_step = -1;
  int lines = 0;
  double worst_delay = 0.0;
  bool first_logs = true;  // lines already stored when the page opened
  // A sync job's two replicas crawl when busy processes hold the cores (a few hundred steps a
  // second): the bounds leave room for that, and a quiet machine passes in about a second.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < until && (lines < 3 || last_step <= first_step)) {
    const std::optional<EventStream::Event> e = stream.Next(std::chrono::seconds(30));
    BOOST_REQUIRE_MESSAGE(e.has_value(), "the stream went quiet: " << stream.head());
    if (e->name == "metrics") {
      for (const json& m : e->data) {
        if (m["name"] != "train_loss") continue;
        if (first_step < 0) first_step = m["step"].get<std::int64_t>();
        last_step = m["step"].get<std::int64_t>();
      }
    }
    if (e->name == "logs") {
      for (const json& l : e->data) {
        if (!first_logs) worst_delay = std::max(worst_delay, e->arrived - l["time"].get<double>());
        ++lines;
      }
      first_logs = false;
    }
    BOOST_TEST(e->name != "logs_hidden");
  }
  BOOST_TEST(stream.head().find("Content-Type: text/event-stream") != std::string::npos);
  BOOST_TEST(last_step > first_step, "the loss curve did not advance");
  BOOST_TEST(lines >= 3);
  // Lines already in the store when the page opened came in its first event; a line printed
  // later arrives within a tick (250 ms) of the daemon receiving it.
  BOOST_TEST_MESSAGE("worst delay from the store to the page: " << worst_delay << " s");
  d.Request({{"type", "cancel"}, {"id", id}});
  d.Wait(id);

  // A page opened on the ended job: its workers' totals are the sums of their recorded windows.
  EventStream again(port, "/api/stream?job=" + std::to_string(id), cookie);
  std::optional<EventStream::Event> job_event = again.Next(std::chrono::seconds(5));
  BOOST_REQUIRE(job_event.has_value());
  while (job_event && job_event->name != "job") job_event = again.Next(std::chrono::seconds(5));
  BOOST_REQUIRE(job_event.has_value());
  std::map<int, double> comm;
  const json recorded = d.Request({{"type", "metrics"}, {"id", id}, {"name", "comm_seconds"}});
  for (const json& m : recorded["metrics"]) {
    // The name filter matches by substring: exposed_comm_seconds too.
    if (m["name"] == "comm_seconds") comm[m["worker"].get<int>()] += m["value"].get<double>();
  }
  BOOST_REQUIRE(!comm.empty());
  // A listener with a token shows the job's settings and its total steps.
  BOOST_TEST(job_event->data["settings"].get<std::string>().find("name = \"streamed\"") !=
                 std::string::npos, job_event->data.dump());
  BOOST_TEST(job_event->data["total_steps"].get<std::int64_t>() > 0, job_event->data.dump());
  const json& totals = job_event->data["worker_totals"];
  BOOST_REQUIRE(totals.size() == comm.size());
  for (const json& t : totals) {
    BOOST_TEST(t["comm_seconds"].get<double>() == comm.at(t["rank"].get<int>()),
               boost::test_tools::tolerance(1e-9));
  }
}

// A finished classification job's final per-class report, made by the replica that writes its
// checkpoints from the final parameters: `dtrain status --json` and the job page's stream carry
// it, and it is what `dtrain eval --per-class --json` says of the exported model on the same
// held-out rows (the same code over the same parameters: exact). In one process and in a
// synchronous ring of two; a regression job has none.
BOOST_AUTO_TEST_CASE(a_finished_jobs_page_carries_its_final_per_class_report) {
  TempDir config_dir;
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", HttpConfig(config_dir, port, "")});
  const std::string blobs = R"([data]
format = "synthetic"
synthetic = "blobs"
rows = 2000
test_rows = 500
features = 6
classes = 3
noise = 1.5
[model]
type = "mlp"
hidden = [8]
[train]
steps = 60
epochs = 0
batch_size = 16
threads = 1
[optimizer]
type = "sgd"
lr = 0.1
)";
  const auto dtrain = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {EnvPath("DTRAIN_BIN"), "--socket", d.socket()});
    const ProcessResult r = RunProcess(args, d.dir().Path(""));
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, args[3] << ": " << r.err);
    return json::parse(r.out);
  };
  for (const std::string cluster : {"", "[cluster]\nworkers = 2\nmode = \"sync\"\n"}) {
    BOOST_TEST_CONTEXT(cluster) {
      const std::string text = "name = \"classes\"\n" + blobs + cluster;
      const std::string file = d.dir().Write("classes.toml", text);
      const std::int64_t id = d.Submit(text);
      const json ended = d.Wait(id);
      BOOST_REQUIRE_MESSAGE(ended["state"] == "succeeded", ended.dump() << d.LogTail(id));
      const json status = dtrain({"status", std::to_string(id), "--json"});
      const json& report = status["class_report"];
      BOOST_REQUIRE_MESSAGE(report.is_object(), status.dump() << d.LogTail(id));
      BOOST_TEST(report["step"] == 60);
      BOOST_TEST(report["classes"] == 3);
      std::int64_t rows = 0;
      for (const json& row : report["confusion"]) {
        for (const json& count : row) rows += count.get<std::int64_t>();
      }
      BOOST_TEST(rows == 500);

      const std::string model = d.dir().Path("classes.dtm");
      dtrain({"export", std::to_string(id), "-o", model, "--json"});
      json evaluated = dtrain({"eval", model, file, "--per-class", "--json"});
      for (const char* field : {"classes", "confusion", "per_class", "macro", "micro"}) {
        BOOST_TEST(report[field] == evaluated[field],
                   field << ": " << report[field].dump() << " vs " << evaluated[field].dump());
      }

      // The job page's stream sends the same JOB object.
      EventStream stream(port, "/api/stream?job=" + std::to_string(id), "");
      std::optional<EventStream::Event> job_event = stream.Next(std::chrono::seconds(5));
      while (job_event && job_event->name != "job")
        job_event = stream.Next(std::chrono::seconds(5));
      BOOST_REQUIRE(job_event.has_value());
      BOOST_TEST(job_event->data["class_report"] == report);
    }
  }
  const std::int64_t regression = d.Submit(
      "name = \"values\"\n[data]\nformat = \"synthetic\"\nsynthetic = \"linear\"\nrows = 200\n"
      "test_rows = 50\nfeatures = 4\n[model]\ntype = \"linear\"\n[train]\nsteps = 10\n");
  BOOST_REQUIRE(d.Wait(regression)["state"] == "succeeded");
  BOOST_TEST(d.Status(regression)["class_report"].is_null());
}

// The jobs page reads an ended job once, and again when it changes (a resume moves its
// `updated` time): the list's cost follows its active jobs.
BOOST_AUTO_TEST_CASE(the_jobs_list_reuses_an_ended_jobs_row_until_it_changes) {
  TempDir dir;
  auto opened = store::Store::Open(dir.Path("s.db"));
  BOOST_REQUIRE(opened.ok());
  store::Store& s = *opened.value();
  store::JobRecord record;
  record.name = "ended";
  record.spec_toml = "name = \"ended\"\n";
  const std::int64_t id = s.CreateJob(record).value();
  BOOST_REQUIRE(s.SetJobState(id, store::JobState::kStarting, "starting").ok());
  BOOST_REQUIRE(s.SetJobState(id, store::JobState::kCancelled, "cancelled by uid 0").ok());
  server::EndedJobRows ended;
  json jobs = server::DashboardJobs(s, std::nullopt, 10, ended).value();
  BOOST_REQUIRE(jobs.size() == 1u);
  BOOST_TEST(jobs[0]["state"] == "cancelled");
  BOOST_TEST(ended.rows.size() == 1u);
  // A row made up for the cache shows that the next list takes it from there ...
  ended.rows[id].second["reason"] = "from the cache";
  BOOST_TEST(server::DashboardJobs(s, std::nullopt, 10, ended).value()[0]["reason"] == "from the cache");
  // ... until the job changes.
  BOOST_REQUIRE(s.SetJobState(id, store::JobState::kQueued, "resumed by the user").ok());
  jobs = server::DashboardJobs(s, std::nullopt, 10, ended).value();
  BOOST_TEST(jobs[0]["state"] == "queued");
  BOOST_TEST(jobs[0]["reason"] == "resumed by the user");
  BOOST_TEST(ended.rows.empty());  // a queued job is not cached
}

// A tiny grid sweep (2 by 2, two at a time) through the daemon: the sweeps page lists it, and
// once it has ended its page's leaderboard is, row for row, what `dtrain sweep status --json`
// prints, with every trial's curve of the metric. A listener with a token asks for it on every
// stream; an id that is no sweep is 404, one that is no number 400, and the daemon goes on.
BOOST_AUTO_TEST_CASE(a_sweeps_page_shows_the_leaderboard_of_sweep_status_and_every_curve) {
  TempDir config_dir;
  const std::string secret = std::string(48, 'd');
  const std::string token = TokenFile(config_dir, secret);
  const std::uint16_t port = FreePort();
  DaemonFixture d({"--config", HttpConfig(config_dir, port, token)});
  const std::string cookie = "Cookie: dtrain_token=" + secret + "\r\n";
  const std::string sweep_file = config_dir.Write("swept.toml", SweepFile(R"(
[sweep]
method = "grid"
metric = "eval_accuracy"
max_concurrent = 2
[sweep.parameters]
"optimizer.lr" = { values = [0.05, 0.2] }
"train.batch_size" = { values = [8, 16] }
)",
                                                                          12, 3));
  auto dtrain = [&d](std::vector<std::string> args) {
    args.insert(args.begin(), {EnvPath("DTRAIN_BIN"), "--socket", d.socket()});
    const ProcessResult done = RunProcess(args, d.dir().Path(""));
    BOOST_REQUIRE_MESSAGE(done.exit_code == 0, done.err);
    return json::parse(done.out);
  };
  const std::int64_t id =
      dtrain({"sweep", "submit", sweep_file, "--json"})["id"].get<std::int64_t>();

  EventStream list(port, "/api/stream?sweeps=1", cookie);
  std::optional<EventStream::Event> listed = list.Next(std::chrono::seconds(10));
  BOOST_REQUIRE_MESSAGE(listed && listed->name == "sweeps", list.head());
  BOOST_REQUIRE(listed->data.size() == 1u);
  const json& row = listed->data[0];
  BOOST_TEST(row["id"] == id);
  BOOST_TEST(row["name"] == "swept");
  BOOST_TEST(row["method"] == "grid");
  BOOST_TEST(row["metric"] == "eval_accuracy");
  BOOST_TEST(row["goal"] == "max");
  BOOST_TEST(row["trials"] == 4);
  BOOST_TEST(row["source"] == sweep_file);  // a listener with a token shows the file's path

  json status;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(5);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = d.Request({{"type", "sweep_status"}, {"id", id}});
  } while (status["sweep"]["state"] == "running" && std::chrono::steady_clock::now() < deadline);
  BOOST_REQUIRE_MESSAGE(status["sweep"]["state"] == "succeeded", status.dump());

  EventStream page(port, "/api/stream?sweep=" + std::to_string(id), cookie);
  std::optional<EventStream::Event> shown = page.Next(std::chrono::seconds(10));
  BOOST_REQUIRE_MESSAGE(shown && shown->name == "sweep", page.head());
  const json board = dtrain({"sweep", "status", std::to_string(id), "--json"});
  BOOST_TEST(shown->data["board"] == board, shown->data["board"].dump() << "\n" << board.dump());
  BOOST_TEST(shown->data["sweep"]["state"] == "succeeded");
  BOOST_REQUIRE(board["trials"].size() == 4u);
  const json& series = shown->data["series"];
  BOOST_REQUIRE(series.size() == 4u);
  for (const json& trial : board["trials"]) {
    const auto curve = std::find_if(series.begin(), series.end(), [&trial](const json& c) {
      return c["trial"] == trial["trial"];
    });
    BOOST_REQUIRE(curve != series.end());
    BOOST_TEST((*curve)["job"] == trial["job"]);
    // Evaluated at steps 3, 6, 9 and 12: the last point is the metric the board ranks by.
    BOOST_REQUIRE_MESSAGE((*curve)["points"].size() >= 4u, curve->dump());
    BOOST_TEST((*curve)["points"].back()[0] == 12);
    BOOST_TEST((*curve)["points"].back()[1] == trial["metric"]);
  }

  // The list shows it ended, its best value the board's first row's.
  listed = list.Next(std::chrono::seconds(10));
  while (listed && listed->data[0]["ended"] != 4) listed = list.Next(std::chrono::seconds(10));
  BOOST_REQUIRE(listed.has_value());
  BOOST_TEST(listed->data[0]["best"] == board["trials"][0]["metric"]);
  BOOST_TEST(listed->data[0]["state"] == "succeeded");

  BOOST_TEST(StatusCode(Get(port, "/api/stream?sweep=" + std::to_string(id))) == 401);
  BOOST_TEST(StatusCode(Get(port, "/api/stream?sweep=" + std::to_string(id + 1000), cookie)) ==
             404);
  BOOST_TEST(StatusCode(Get(port, "/api/stream?sweep=abc", cookie)) == 400);
  BOOST_TEST(StatusCode(Get(port, "/api/stream?sweep=99999999999999999999", cookie)) == 400);
  BOOST_TEST(d.Request({{"type", "version"}})["ok"] == true);
}

// A sweep page draws at most kMaxSeriesPoints of a trial's curve, spread over its rows from the
// first to the last; a non-finite value is left out.
BOOST_AUTO_TEST_CASE(a_sweep_pages_curves_are_capped_from_first_to_last_point) {
  TempDir dir;
  auto opened = store::Store::Open(dir.Path("s.db"));
  BOOST_REQUIRE(opened.ok());
  store::Store& s = *opened.value();
  store::SweepRecord sweep;
  sweep.name = "long";
  sweep.method = "grid";
  sweep.metric = "train_loss";
  sweep.goal = "min";
  sweep.trials = 1;
  sweep.id = s.CreateSweep(sweep).value();
  store::JobRecord record;
  record.name = "long";
  record.spec_toml = "name = \"long\"\n";
  const std::int64_t job = s.CreateTrialJob({sweep.id, 0, std::nullopt, "[]"}, record).value();
  constexpr int kRows = 1000;
  std::vector<train::MetricPoint> points;
  for (int step = 1; step <= kRows; ++step) {
    points.push_back({step, 0.0, "train_loss", step == 500 ? std::nan("") : 1.0 / step});
    points.push_back({step, 0.0, "train_loss_other", 7.0});
  }
  s.AppendMetrics(job, 0, points);
  BOOST_REQUIRE(s.Flush().ok());
  server::EndedSeries ended;
  const json page =
      server::DashboardSweep(s, s.GetSweep(sweep.id).value(), nullptr, nullptr, ended).value();
  BOOST_REQUIRE(page["series"].size() == 1u);
  const json& curve = page["series"][0]["points"];
  BOOST_TEST(curve.size() == server::kMaxSeriesPoints);
  BOOST_TEST(curve.front()[0] == 1);
  BOOST_TEST(curve.back()[0] == kRows);
  BOOST_TEST(curve.back()[1].get<double>() == 1.0 / kRows);
  for (std::size_t i = 1; i < curve.size(); ++i) {
    BOOST_TEST(curve[i][0].get<std::int64_t>() > curve[i - 1][0].get<std::int64_t>());
    BOOST_TEST(curve[i][0] != 500);
  }
  BOOST_TEST(page["board"]["trials"][0]["trial"] == 0);
}

BOOST_AUTO_TEST_CASE(request_heads_parse_or_are_refused) {
  using server::ParseRequestHead;
  const auto r = ParseRequestHead("GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAuthorization:  Bearer t \r\n\r\n");
  BOOST_REQUIRE(r.has_value());
  BOOST_TEST(r->method == "GET");
  BOOST_TEST(r->path == "/metrics");
  BOOST_TEST(r->query == "x=1");
  BOOST_TEST(r->Header("authorization").value_or("") == "Bearer t");
  BOOST_TEST(r->Header("host").value_or("") == "a");
  BOOST_TEST(ParseRequestHead("GET / HTTP/1.0\r\n\r\n").has_value());
  for (const char* bad : {"GET /metrics HTTP/1.1\r\n", "GET metrics HTTP/1.1\r\n\r\n",
                          "GET /a b HTTP/1.1\r\n\r\n", "GET / HTTP/2\r\n\r\n",
                          "GET / HTTP/1.1\r\nno colon\r\n\r\n",
                          "GET / HTTP/1.1\r\n folded: x\r\n\r\n", "/ HTTP/1.1\r\n\r\n"}) {
    BOOST_TEST(!ParseRequestHead(bad).has_value(), bad);
  }
  server::HttpResponse missing;
  missing.status = 404;
  missing.body = "no\n";
  const std::string formatted = server::FormatResponse(missing, false);
  BOOST_TEST(formatted.starts_with("HTTP/1.1 404 Not Found\r\n"));
  BOOST_TEST(formatted.find("Content-Length: 3\r\n") != std::string::npos);
  BOOST_TEST(formatted.ends_with("\r\n\r\nno\n"));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace web_test
}  // namespace dtrain::testing
