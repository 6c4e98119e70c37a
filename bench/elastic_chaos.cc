// A chaos run of an elastic synchronous job (issue 46): an MLP 784-256-128-10 on Fashion-MNIST,
// mode sync on a ring of 3 replicas, one per "host" (network namespaces h0..h2, one peer dtraind
// each, a shared cluster key), a global batch of 3 x 64, Adam with a cosine schedule, 8 + 2N
// epochs for N events (1.3 s an epoch undisturbed on a quiet 2-core Xeon, 3 s on a loaded one:
// room for the events in its first 80%).
//   1. The static run: the job without min_workers, undisturbed; its pace and final accuracy.
//   2. The chaos run: the same job with min_workers = 2 and restart.max_restarts = N. N times, at
//      a random moment (0.5-3 s after the previous join, seeded), the training process of a
//      random replica is SIGKILLed (`dtraind worker --job ID --rank R` in its host's namespace:
//      the namespaces share this machine's pid space; a peer's worker row has the pid of its
//      stand-in on h0) and the bench waits for "worker R joined at step S: 3 of 3".
// Per event it measures: whether both survivors kept their pids (worker rows and training
// processes) until the join; the progress the loss cost (from the last step logged before the
// kill to the first one logged past it, the time taken less what those steps take at the static
// run's pace: see LostSeconds); and the join latency, from the replacement's worker row `started`
// (capacity appearing) to the "joined" event (and, for context, from the kill to the "joined"
// event). It prints each event, the median and max of each figure, and both final test accuracies,
// beside the CPU model; checks the bounds: every survivor kept, a loss costs < 2 s
// (median), a join takes < 10 s, the accuracy within 0.3 points of the static run. Exit status: 0
// all bounds met, 1 a bound missed or a run failed or hung, 2 cannot run here. Needs root. Usage:
// bench_elastic_chaos [--events N] [--seed S] [--max-seconds S] [DTRAIND DTRAIN]
// (scripts/elastic-chaos builds and runs it).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/elastic_job.h"
#include "bench/median.h"
#include "bench/netns_jobs.h"

namespace {

using json = nlohmann::json;
using dtrain::bench::JobCluster;

constexpr int kReplicas = 3;
constexpr double kJoinTimeout = 60.0;  // seconds from a kill to the join before it is a hang

struct ChaosArgs {
  int events = 20;
  unsigned seed = static_cast<unsigned>(std::time(nullptr));
  double max_seconds = 900.0;
  dtrain::bench::BenchArgs bench;
};

// One loss and the join that followed it.
struct ChaosEvent {
  int rank = 0;
  std::int64_t step = 0;  // the job's step when it was killed
  double kill_time = 0.0;
  bool survivors_kept = true;
  double join_seconds = 0.0;           // from the replacement's start
  double outage_seconds = 0.0;         // from the kill
  std::optional<double> lost_seconds;  // filled in once the job has ended
};

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void SleepSeconds(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

volatile std::sig_atomic_t g_stop_asked = 0;  // SIGINT or SIGTERM came
void AskStop(int) { g_stop_asked = 1; }

// True once `deadline` has passed or a stop was asked: the bench then ends, and its cluster's
// destructor stops the daemons and removes the namespaces.
bool Over(double deadline) { return g_stop_asked != 0 || Now() > deadline; }

int Epochs(int events) { return 8 + 2 * events; }

// The job, elastic or static, sized and allowed restarts for `events` losses.
std::string Job(bool elastic, int events) {
  const std::string cluster = "workers = " + std::to_string(kReplicas) + "\nmode = \"sync\"\n" +
                              (elastic ? "min_workers = 2\n" : "");
  return dtrain::bench::FashionJob(
             elastic ? "elastic-chaos" : "elastic-static",
             "[model]\ntype = \"mlp\"\nhidden = [256, 128]\n", kReplicas,
             "epochs = " + std::to_string(Epochs(events)) +
                 "\nbatch_size = 64\nseed = 7\nlog_every = 5\neval_every = 1000000\n",
             cluster, true,
             "type = \"adam\"\nlr = 0.001\nschedule = \"cosine\"\nmin_lr = 0.00005\n") +
         "[restart]\nmax_restarts = " + std::to_string(events) + "\n";
}

bool Ended(const json& job) {
  const std::string state = job.value("state", "");
  return state == "succeeded" || state == "failed" || state == "cancelled";
}

// Polls job `id` until it has ended; its JOB object, or null once Over (said on stderr).
json WaitForEnd(JobCluster& cluster, std::int64_t id, double deadline) {
  for (;;) {
    json job = cluster.Status(id);
    if (job.is_object() && Ended(job)) return job;
    if (Over(deadline)) {
      std::fprintf(stderr, "job %lld had not ended at the wall-clock cap or a stop: %s\n",
                   static_cast<long long>(id), job.dump().c_str());
      return nullptr;
    }
    SleepSeconds(0.5);
  }
}

// The training process of each replica of job `id`, replica r in host r (-1 where none runs).
std::vector<pid_t> TrainingProcesses(const JobCluster& cluster, std::int64_t id) {
  std::vector<pid_t> pids;
  for (int r = 0; r < kReplicas; ++r) {
    pids.push_back(dtrain::bench::TrainingProcess(cluster.netns(), r, id, r));
  }
  return pids;
}

bool AllFound(const std::vector<pid_t>& pids) {
  return std::find(pids.begin(), pids.end(), -1) == pids.end();
}

// Polls job `id` until it runs with every replica (worker rows and training processes) and has
// logged a step; its JOB object, or null if it ended first or Over.
json WaitForTraining(JobCluster& cluster, std::int64_t id, double deadline) {
  for (;;) {
    json job = cluster.Status(id);
    if (!job.is_object() || Ended(job) || Over(deadline)) return nullptr;
    if (job["state"] == "running" && job["step"].get<std::int64_t>() > 0 &&
        AllFound(dtrain::bench::RunningPids(job, kReplicas)) &&
        AllFound(TrainingProcesses(cluster, id))) {
      return job;
    }
    SleepSeconds(0.1);
  }
}

// Kills the training process of a random replica of the running `job` (in its host: on a peer,
// not its stand-in) and waits for its replacement to join (the job's `joins_before + 1`-th
// " joined at step " event, with every replica running), watching meanwhile that the survivors
// keep their worker rows' pids and their training processes. Empty when the job stopped running
// or did not regroup in time (said on stderr).
std::optional<ChaosEvent> LoseOne(JobCluster& cluster, const json& job, std::mt19937& rng,
                                  std::size_t joins_before, double deadline) {
  const std::int64_t id = job["id"].get<std::int64_t>();
  const std::vector<pid_t> before = dtrain::bench::RunningPids(job, kReplicas);
  const std::vector<pid_t> processes_before = TrainingProcesses(cluster, id);
  ChaosEvent event;
  event.rank = std::uniform_int_distribution<int>(0, kReplicas - 1)(rng);
  event.step = job["step"].get<std::int64_t>();
  event.kill_time = Now();
  ::kill(processes_before[static_cast<std::size_t>(event.rank)], SIGKILL);
  const double give_up = std::min(deadline, event.kill_time + kJoinTimeout);
  for (json now = cluster.Status(id);; now = cluster.Status(id)) {
    if (!now.is_object() || now["state"] != "running" || Over(give_up)) {
      std::fprintf(stderr, "replica %d killed at step %lld: no join (%s): %s\n", event.rank,
                   static_cast<long long>(event.step),
                   Over(give_up) ? "timed out or stopped" : "the job stopped running",
                   now.dump().c_str());
      return std::nullopt;
    }
    const std::vector<pid_t> pids = dtrain::bench::RunningPids(now, kReplicas);
    const std::vector<pid_t> processes = TrainingProcesses(cluster, id);
    for (int r = 0; r < kReplicas; ++r) {
      const auto at = static_cast<std::size_t>(r);
      if (r != event.rank && (pids[at] != before[at] || processes[at] != processes_before[at])) {
        event.survivors_kept = false;
      }
    }
    const std::vector<json> joins = dtrain::bench::EventsSaying(now, " joined at step ");
    if (joins.size() > joins_before && AllFound(pids)) {
      const json& joined = joins[joins_before];
      const std::string who = "worker " + std::to_string(event.rank) + " joined";
      const std::optional<double> started =
          dtrain::bench::StartedTime(now, pids[static_cast<std::size_t>(event.rank)]);
      if (joined["reason"].get<std::string>().rfind(who, 0) != 0 || !started) {
        std::fprintf(stderr, "replica %d killed: unexpected join: %s\n", event.rank,
                     joined.dump().c_str());
        return std::nullopt;
      }
      event.join_seconds = joined["time"].get<double>() - *started;
      event.outage_seconds = joined["time"].get<double>() - event.kill_time;
      return event;
    }
    SleepSeconds(0.1);
  }
}

// Past 80% of its steps: a replacement might not join before the job ends.
bool NearItsEnd(const json& job) {
  if (!job["total_steps"].is_number()) return false;
  const auto step = static_cast<double>(job["step"].get<std::int64_t>());
  return step > 0.8 * job["total_steps"].get<double>();
}

// The chaos run's events until `wanted` are done, the job nears its end (80% of its steps) or
// something failed (*failed set); `rng` draws the pauses and the victims.
std::vector<ChaosEvent> RunEvents(JobCluster& cluster, std::int64_t id, int wanted,
                                  std::mt19937& rng, double deadline, bool* failed) {
  std::vector<ChaosEvent> events;
  std::uniform_real_distribution<double> pause(0.5, 3.0);
  while (static_cast<int>(events.size()) < wanted) {
    SleepSeconds(pause(rng));
    const json job = WaitForTraining(cluster, id, deadline);
    if (!job.is_object()) {
      std::fprintf(stderr, "the chaos job stopped running or the cap was reached\n");
      *failed = true;
      break;
    }
    if (NearItsEnd(job)) break;
    const std::optional<ChaosEvent> event = LoseOne(cluster, job, rng, events.size(), deadline);
    if (!event) {
      *failed = true;
      break;
    }
    events.push_back(*event);
    std::printf(
        "  event %2zu: replica %d killed at step %6lld, survivors %s, its replacement "
        "joined %.2f s after it started, %.2f s after the kill\n",
        events.size(), event->rank, static_cast<long long>(event->step),
        event->survivors_kept ? "kept" : "RESTARTED", event->join_seconds, event->outage_seconds);
    std::fflush(stdout);
  }
  return events;
}

double EvalAccuracy(const json& job) {
  const json& metrics = job["metrics"];
  return metrics.contains("eval_accuracy") ? metrics["eval_accuracy"].get<double>() : -1.0;
}

// "met" or "MISSED".
const char* Verdict(bool met) { return met ? "met" : "MISSED"; }

// Prints the median and max of `values` (seconds, not empty) and `bound`, beside the CPU model.
void PrintSeconds(const char* what, const std::vector<double>& values, const std::string& bound,
                  const std::string& cpu) {
  std::printf("%-24s median %6.2f s, max %6.2f s  %s [%s]\n", what, dtrain::bench::Median(values),
              *std::max_element(values.begin(), values.end()), bound.c_str(), cpu.c_str());
}

// Prints the chaos run's figures against the static run's, and whether the bounds hold:
// true when they all do.
bool Report(JobCluster& cluster, const json& static_job, const json& chaos_job,
            std::vector<ChaosEvent>& events, double pace, const std::string& cpu) {
  const auto first_times =
      dtrain::bench::FirstTimeOfSteps(dtrain::bench::WorkerRows(cluster, chaos_job, "train_loss"));
  std::vector<double> lost, joins, outages;
  int kept = 0;
  std::printf("progress lost per event (s):");
  for (ChaosEvent& e : events) {
    e.lost_seconds = dtrain::bench::LostSeconds(first_times, e.kill_time, pace);
    if (e.lost_seconds) {
      lost.push_back(*e.lost_seconds);
      std::printf(" %.2f", *e.lost_seconds);
    } else {
      std::printf(" -");
    }
    joins.push_back(e.join_seconds);
    outages.push_back(e.outage_seconds);
    kept += e.survivors_kept ? 1 : 0;
  }
  std::printf("\n");
  const bool all_kept = kept == static_cast<int>(events.size());
  std::printf("%-24s %d of %zu events  (bound: all: %s) [%s]\n", "survivors kept", kept,
              events.size(), Verdict(all_kept), cpu.c_str());
  if (events.empty() || lost.empty()) return false;
  const bool cheap = dtrain::bench::Median(lost) < 2.0;
  PrintSeconds("progress lost a loss", lost,
               std::string("(bound: median < 2 s: ") + Verdict(cheap) + ")", cpu);
  const bool prompt = *std::max_element(joins.begin(), joins.end()) < 10.0;
  PrintSeconds("join latency", joins, std::string("(bound: max < 10 s: ") + Verdict(prompt) + ")",
               cpu);
  PrintSeconds("kill to join", outages, "", cpu);
  const double accuracy = EvalAccuracy(chaos_job), static_accuracy = EvalAccuracy(static_job);
  const double points = 100.0 * (accuracy - static_accuracy);
  const bool close = std::fabs(points) <= 0.3;
  std::printf("%-24s %.4f, static %.4f: %+.2f points  (bound: within 0.3: %s) [%s]\n",
              "eval_accuracy", accuracy, static_accuracy, points, Verdict(close), cpu.c_str());
  return all_kept && cheap && prompt && close;
}

ChaosArgs ParseChaosArgs(int argc, char** argv) {
  ChaosArgs args;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--events" && i + 1 < argc) {
      args.events = std::clamp(std::atoi(argv[++i]), 1, 100);
    } else if (a == "--seed" && i + 1 < argc) {
      args.seed = static_cast<unsigned>(std::strtoul(argv[++i], nullptr, 10));
    } else if (a == "--max-seconds" && i + 1 < argc) {
      args.max_seconds = std::atof(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  args.bench = dtrain::bench::ParseBenchArgs(static_cast<int>(rest.size()), rest.data());
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  if (!dtrain::bench::NetnsOrSayWhy("bench_elastic_chaos")) return 2;
  const ChaosArgs args = ParseChaosArgs(argc, argv);
  std::signal(SIGINT, AskStop);
  std::signal(SIGTERM, AskStop);
  const double deadline = Now() + args.max_seconds;
  const std::string cpu = dtrain::bench::CpuModel();
  JobCluster cluster(kReplicas, args.bench);
  std::printf(
      "elastic chaos: MLP 784-256-128-10, Fashion-MNIST, sync ring of %d replicas on %d "
      "netns hosts, global batch %d, %d epochs; %d events, seed %u\n",
      kReplicas, kReplicas, kReplicas * 64, Epochs(args.events), args.events, args.seed);
  std::fflush(stdout);

  const std::int64_t static_id = cluster.Submit(Job(false, args.events));
  const json static_job = static_id < 0 ? nullptr : WaitForEnd(cluster, static_id, deadline);
  if (!static_job.is_object() || static_job["state"] != "succeeded") {
    std::fprintf(stderr, "the static run failed: %s\n", static_job.dump().c_str());
    return 1;
  }
  const double pace = dtrain::bench::StepSeconds(cluster, static_job);
  std::printf("static run: %.1f s, %.1f ms a step, eval_accuracy %.4f  [%s]\n",
              dtrain::bench::RunningSeconds(static_job), pace * 1000, EvalAccuracy(static_job),
              cpu.c_str());
  std::fflush(stdout);

  std::mt19937 rng(args.seed);
  bool failed = false;
  const std::int64_t chaos_id = cluster.Submit(Job(true, args.events));
  std::vector<ChaosEvent> events =
      chaos_id < 0 ? std::vector<ChaosEvent>{}
                   : RunEvents(cluster, chaos_id, args.events, rng, deadline, &failed);
  const json chaos_job = chaos_id < 0 ? nullptr : WaitForEnd(cluster, chaos_id, deadline);
  if (!chaos_job.is_object() || chaos_job["state"] != "succeeded") {
    std::fprintf(stderr, "the chaos run failed: %s\n", chaos_job.dump().c_str());
    return 1;
  }

  std::printf("chaos run: %.1f s, %zu of %d events%s\n", dtrain::bench::RunningSeconds(chaos_job),
              events.size(), args.events,
              failed                                          ? " (then one failed: said above)"
              : static_cast<int>(events.size()) < args.events ? " (then the job neared its end)"
                                                              : "");
  return Report(cluster, static_job, chaos_job, events, pace, cpu) && !failed ? 0 : 1;
}
