// Compressed gradients against whole ones across "hosts" (network namespaces, one dtraind each, a
// shared cluster key), when the network is fast and when it is the bottleneck: MLP
// 784-2048-2048-2048-10 (10.0 M parameters, a 40 MB gradient) or, with --model cnn, the example
// CNN with its dense layer widened to 1024 (3.27 M parameters, a 13 MB gradient) on
// Fashion-MNIST, sync ring, one replica per host (--per-host N: N on each, round robin, summing
// within each host first: hierarchy = "auto"), a global batch of 256, Adam, a fixed number of
// steps, every job submitted to h0's daemon; compression none, bf16, powersgd (rank 4) and topk
// (fraction 0.001), each with no limit and with every host's link at 1 Gbit/s and 100 Mbit/s (tc
// tbf), in rounds. Prints per method the medians over the rounds of:
//   - samples/s, 256 rows over a step's seconds (each replica's train_loss rows after start-up:
//     StepSeconds), with its share of the method's unlimited figure and its ratio to none's at
//     the same link, both taken within a round;
//   - the bytes a worker sends a step (its wire_bytes metric, bytes_sent for none, over the
//     logging windows after the first, at no limit) and how many times fewer than none's;
//   - compression's share of the step at no limit (compression_seconds over the step's time);
//   - the exposed share of the step at no limit (exposed_comm_seconds over the step's time: what
//     the training thread waited for the exchange; an overlapped compressed job's includes the
//     compression the pass did not hide);
//   - at 1 Gbit/s, the share of the exchange the backward pass hid (1 - exposed_comm_seconds /
//     comm_seconds): "none" and the compressed methods overlap ([cluster] bucket_bytes' default),
//     "serial" is none with bucket_bytes = 0, the whole gradient after the pass, and
//     "powersgd-serial" powersgd so.
// --accuracy instead trains none, powersgd and powersgd-warm (its first epoch uncompressed) for
// --epochs epochs (default 2), evaluating on the test set after each, and prints each one's test
// accuracy after every epoch, the running time, and its final difference from none in points;
// --link RATE limits every host's link, --momentum trains with momentum SGD (lr 0.05, cosine)
// instead of Adam, --target ACC adds the seconds to that test accuracy and none's over them,
// --seed N sets the jobs' [train] seed (initialisation and data order; default 1, the job's).
// Needs root. Usage: bench_compression_hosts [--model mlp|cnn] [--hosts N] [--per-host N]
//   [--steps N] [--rounds N] [--accuracy] [--epochs N] [--link RATE] [--momentum] [--target ACC]
//   [--seed N] [--only TEXT] [DTRAIND DTRAIN]   (default: the MLP, 2 hosts, 24 steps, 3 rounds; the
//   binaries beside this one's build tree); --only runs the methods whose name contains TEXT, or
//   one of TEXT's comma-separated parts ("none,serial"); a part ending in '$' must end the name
//   ("none,powersgd$": not powersgd-serial).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/median.h"
#include "bench/netns_jobs.h"

namespace {

using json = nlohmann::json;
using dtrain::bench::JobCluster;
using dtrain::bench::MetricPerStep;
using dtrain::bench::WorkerRows;

constexpr int kGlobalBatch = 256;

struct Method {
  std::string name;
  std::string keys;  // [cluster] compression keys
};

const std::vector<Method>& Methods() {
  static const std::vector<Method> methods = {
      {"none", ""},
      {"serial", "bucket_bytes = 0\n"},  // none, the whole gradient after the pass (no overlap)
      {"bf16", "compression = \"bf16\"\n"},
      {"powersgd", "compression = \"powersgd\"\ncompression_rank = 4\n"},
      // powersgd compressing the whole gradient after the pass (no overlap)
      {"powersgd-serial", "compression = \"powersgd\"\ncompression_rank = 4\nbucket_bytes = 0\n"},
      // powersgd after a first epoch (235 steps of 256 rows) uncompressed
      {"powersgd-warm",
       "compression = \"powersgd\"\ncompression_rank = 4\ncompression_warmup_steps = 235\n"},
      {"topk", "compression = \"topk\"\ncompression_fraction = 0.001\n"}};
  return methods;
}

struct Options {
  bool cnn = false;  // --model cnn: dtrain::bench::kWideCnn instead of kWideMlp
  int hosts = 2;
  int per_host = 1;  // replicas on each host
  int workers() const { return hosts * per_host; }
  int steps = 24;
  int rounds = 3;
  bool accuracy = false;
  int epochs = 2;
  std::string link;       // --accuracy: every host's link (tc tbf rate); empty: no limit
  bool momentum = false;  // --accuracy: momentum SGD (lr 0.05, cosine) instead of Adam
  double target = 0.0;    // --accuracy: also the seconds to this test accuracy (0: not asked)
  long long seed = 1;     // --accuracy: the jobs' [train] seed
};

struct Link {
  std::string rate;  // tc tbf's; empty: no limit
  std::string label;
};

const std::vector<Link>& Links() {
  static const std::vector<Link> links = {
      {"", "no limit"}, {"1gbit", "1 Gbit/s"}, {"100mbit", "100 Mbit/s"}};
  return links;
}

const char* ModelKeys(const Options& options) {
  return options.cnn ? dtrain::bench::kWideCnn : dtrain::bench::kWideMlp;
}

std::string ClusterKeys(const Method& method, int workers) {
  return "workers = " + std::to_string(workers) + "\nmode = \"sync\"\n" + method.keys;
}

// What one job gave; every figure 0 where it failed.
struct Figures {
  double samples_per_second = 0.0;
  double wire_bytes = 0.0;      // a worker's, per step
  double compress_share = 0.0;  // compression_seconds over the step's seconds
  double exposed_share = 0.0;   // exposed_comm_seconds over the step's seconds
  double hidden_share = 0.0;    // of comm_seconds, what the pass hid (1 - exposed_comm_seconds /
                                // comm_seconds)
};

Figures Measure(JobCluster& cluster, const Method& method, const Link& link,
                const std::string& text) {
  const json job = cluster.RunJob(text, link.rate);
  const double step = dtrain::bench::StepSeconds(cluster, job);
  if (step <= 0.0) {
    std::fprintf(stderr, "%s, %s: %s\n", method.name.c_str(), link.label.c_str(),
                 job.dump().c_str());
    return {};
  }
  const bool compressed = method.keys.find("compression") != std::string::npos;
  const std::string sent = compressed ? "wire_bytes" : "bytes_sent";
  const double comm = MetricPerStep(WorkerRows(cluster, job, "comm_seconds"));
  const double exposed = MetricPerStep(WorkerRows(cluster, job, "exposed_comm_seconds"));
  return {.samples_per_second = kGlobalBatch / step,
          .wire_bytes = MetricPerStep(WorkerRows(cluster, job, sent)),
          .compress_share = MetricPerStep(WorkerRows(cluster, job, "compression_seconds")) / step,
          .exposed_share = exposed / step,
          .hidden_share = comm > 0.0 ? 1.0 - exposed / comm : 0.0};
}

// One round's figures, [method][link].
using Round = std::vector<std::vector<Figures>>;

// The median of `figure` (of a round) over the rounds where it is known (> 0); 0 where it never
// is.
template <typename Figure>
double MedianOver(const std::vector<Round>& rounds, Figure figure) {
  std::vector<double> known;
  for (const Round& round : rounds) {
    const double value = figure(round);
    if (value > 0.0) known.push_back(value);
  }
  return known.empty() ? 0.0 : dtrain::bench::Median(known);
}

// Every method at every link, `options.rounds` times: a round takes each link in turn and, at a
// link, each method in turn, so that the figures compared are taken close in time. Says each
// job's samples/s on stderr as it goes.
std::vector<Round> RunRounds(JobCluster& cluster, const Options& options,
                             const std::vector<Method>& methods) {
  const std::string train = "epochs = 0\nsteps = " + std::to_string(options.steps) +
                            "\nbatch_size = " + std::to_string(kGlobalBatch / options.workers()) +
                            "\nlog_every = " + std::to_string(std::max(1, options.steps / 8)) +
                            "\neval_every = 1000000\n";
  std::vector<Round> rounds(options.rounds,
                            Round(methods.size(), std::vector<Figures>(Links().size())));
  for (int r = 0; r < options.rounds; ++r) {
    for (std::size_t l = 0; l < Links().size(); ++l) {
      for (std::size_t m = 0; m < methods.size(); ++m) {
        const std::string text =
            dtrain::bench::FashionJob("compression-hosts", ModelKeys(options), options.hosts, train,
                                      ClusterKeys(methods[m], options.workers()), false);
        rounds[r][m][l] = Measure(cluster, methods[m], Links()[l], text);
        std::fprintf(stderr, "round %d, %s, %s: %.0f samples/s\n", r + 1, Links()[l].label.c_str(),
                     methods[m].name.c_str(), rounds[r][m][l].samples_per_second);
      }
    }
  }
  return rounds;
}

// The table of medians: per method and link samples/s (its share of the method's unlimited
// figure, its ratio to none's at the link, both taken within a round), then the bytes a worker
// sends a step, none's over them, compression's and the exposed exchange's shares of the step at
// no limit, and what the pass hid of the exchange at 1 Gbit/s. `none`: the
// index of none in `methods`, or methods.size() where it did not run.
void PrintMedians(const std::vector<Round>& rounds, const std::vector<Method>& methods,
                  std::size_t none) {
  const auto rate = [](const Round& round, std::size_t method, std::size_t link) {
    return round[method][link].samples_per_second;
  };
  std::printf(
      "medians of %zu rounds; samples/s (share of the method's unlimited figure, ratio "
      "to none at the same link)\n%-15s",
      rounds.size(), "method");
  for (const Link& link : Links()) std::printf(" %22s", link.label.c_str());
  std::printf(" %9s %8s %10s %10s %10s\n", "MB/step", "none/it", "compress", "exposed",
              "hidden@1G");
  const double none_bytes =
      none == methods.size()
          ? 0.0
          : MedianOver(rounds, [&](const Round& round) { return round[none][0].wire_bytes; });
  for (std::size_t m = 0; m < methods.size(); ++m) {
    std::printf("%-15s", methods[m].name.c_str());
    for (std::size_t l = 0; l < Links().size(); ++l) {
      const double samples =
          MedianOver(rounds, [&](const Round& round) { return rate(round, m, l); });
      const double share = MedianOver(rounds, [&](const Round& round) {
        return rate(round, m, 0) > 0.0 ? rate(round, m, l) / rate(round, m, 0) : 0.0;
      });
      const double vs_none = MedianOver(rounds, [&](const Round& round) {
        return none != methods.size() && rate(round, none, l) > 0.0
                   ? rate(round, m, l) / rate(round, none, l)
                   : 0.0;
      });
      if (samples <= 0.0) {
        std::printf(" %22s", "failed");
      } else if (vs_none > 0.0) {
        std::printf(" %7.0f (%4.2f, %5.2fx)", samples, share, vs_none);
      } else {
        std::printf(" %7.0f (%4.2f)        ", samples, share);
      }
    }
    const double bytes =
        MedianOver(rounds, [&](const Round& round) { return round[m][0].wire_bytes; });
    const double compress =
        MedianOver(rounds, [&](const Round& round) { return round[m][0].compress_share; });
    const double exposed =
        MedianOver(rounds, [&](const Round& round) { return round[m][0].exposed_share; });
    std::printf(" %9.3f", bytes / 1e6);
    if (none_bytes > 0.0 && bytes > 0.0) {
      std::printf(" %7.1fx", none_bytes / bytes);
    } else {
      std::printf(" %8s", "-");
    }
    // What overlap hid of the exchange at 1 Gbit/s (Links()[1]).
    const double hidden =
        MedianOver(rounds, [&](const Round& round) { return round[m][1].hidden_share; });
    std::printf(" %9.1f%% %9.1f%% %9.0f%%\n", 100.0 * compress, 100.0 * exposed, 100.0 * hidden);
  }
}

// Whether `name` contains one of the comma-separated parts of `only` (all names: only is empty);
// a part ending in '$' must end it.
bool Chosen(const std::string& name, const std::string& only) {
  std::size_t begin = 0;
  for (;;) {
    const std::size_t comma = only.find(',', begin);
    std::string part = only.substr(begin, comma - begin);
    if (part.ends_with('$')) {
      part.pop_back();
      if (name.ends_with(part)) return true;
    } else if (name.find(part) != std::string::npos) {
      return true;
    }
    if (comma == std::string::npos) return false;
    begin = comma + 1;
  }
}

void Throughput(JobCluster& cluster, const Options& options, const std::string& only) {
  std::vector<Method> methods;
  for (const Method& m : Methods()) {
    // powersgd-warm's warm-up outlasts a throughput job: it would measure none again.
    if (Chosen(m.name, only) && m.name != "powersgd-warm") methods.push_back(m);
  }
  const auto none = std::find_if(methods.begin(), methods.end(),
                                 [](const Method& m) { return m.name == "none"; });
  PrintMedians(RunRounds(cluster, options, methods), methods,
               static_cast<std::size_t>(none - methods.begin()));
}

// Seconds from `job`'s start of running to its first evaluation at or above `target`; 0 if none.
double SecondsTo(const json& job, const std::vector<dtrain::bench::MetricSample>& evals,
                 double target) {
  double start = 0.0;
  for (const json& e : job["events"]) {
    if (e["to"] == "running") {
      start = e["time"].get<double>();
      break;
    }
  }
  for (const dtrain::bench::MetricSample& eval : evals) {
    if (eval.value >= target && start > 0.0) return eval.time - start;
  }
  return 0.0;
}

// none and the powersgd methods for `options.epochs` epochs at no limit, each evaluated on the
// test set after every epoch: one line each with every epoch's test accuracy, the running time
// and, for powersgd, its final accuracy's difference from none's in points.
void Accuracy(JobCluster& cluster, const Options& options, const std::string& only) {
  const std::string train = "epochs = " + std::to_string(options.epochs) +
                            "\nbatch_size = " + std::to_string(kGlobalBatch / options.workers()) +
                            "\nlog_every = 100\nseed = " + std::to_string(options.seed) + "\n";
  const std::string optimizer =
      options.momentum
          ? "type = \"momentum\"\nlr = 0.05\nschedule = \"cosine\"\nwarmup_steps = 100\n"
          : dtrain::bench::kWideMlpAdam;
  std::printf(
      "%d epochs at %s, %s, seed %lld; test accuracy after each epoch, running seconds, final "
      "accuracy's points vs none",
      options.epochs, options.link.empty() ? "no limit" : options.link.c_str(),
      options.momentum ? "momentum SGD lr 0.05, cosine" : "Adam lr 0.0005", options.seed);
  if (options.target > 0.0) {
    std::printf("; seconds to %.2f (first evaluation at or above it) and none's over them",
                options.target);
  }
  std::printf("\n");
  double none_to_target = 0.0;
  double none_accuracy = -1.0;
  for (const Method& method : Methods()) {
    if (method.name != "none" && !method.name.starts_with("powersgd")) continue;
    if (!Chosen(method.name, only)) continue;
    const json job = cluster.RunJob(
        dtrain::bench::FashionJob("compression-accuracy", ModelKeys(options), options.hosts, train,
                                  ClusterKeys(method, options.workers()), true, optimizer),
        options.link);
    const auto rows = dtrain::bench::WorkerRows(cluster, job, "eval_accuracy");
    std::printf("%-9s", method.name.c_str());
    if (rows.empty() || rows.begin()->second.empty()) {
      std::printf(" failed\n");
      std::fprintf(stderr, "%s: %s\n", method.name.c_str(), job.dump().c_str());
      continue;
    }
    for (const dtrain::bench::MetricSample& eval : rows.begin()->second) {
      std::printf(" %7.4f", eval.value);
    }
    const double accuracy = rows.begin()->second.back().value;
    std::printf(" %8.1f s", dtrain::bench::RunningSeconds(job));
    if (method.name == "none") none_accuracy = accuracy;
    if (method.name != "none" && none_accuracy >= 0.0) {
      std::printf(" %+6.2f", (accuracy - none_accuracy) * 100.0);
    }
    if (options.target > 0.0) {
      const double to_target = SecondsTo(job, rows.begin()->second, options.target);
      if (to_target <= 0.0) {
        std::printf("  not reached");
      } else {
        std::printf("  %.1f s to %.2f", to_target, options.target);
        if (method.name == "none") none_to_target = to_target;
        if (method.name != "none" && none_to_target > 0.0) {
          std::printf(" (%.2fx faster)", none_to_target / to_target);
        }
      }
    }
    std::printf("\n");
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (!dtrain::bench::NetnsOrSayWhy("bench_compression_hosts")) return 2;
  Options options;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) {
      options.cnn = std::string(argv[++i]) == "cnn";
    } else if (a == "--hosts" && i + 1 < argc) {
      options.hosts = std::clamp(std::atoi(argv[++i]), 2, 16);
    } else if (a == "--per-host" && i + 1 < argc) {
      options.per_host = std::clamp(std::atoi(argv[++i]), 1, 4);
    } else if (a == "--steps" && i + 1 < argc) {
      options.steps = std::max(16, std::atoi(argv[++i]));
    } else if (a == "--rounds" && i + 1 < argc) {
      options.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--epochs" && i + 1 < argc) {
      options.epochs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--accuracy") {
      options.accuracy = true;
    } else if (a == "--link" && i + 1 < argc) {
      options.link = argv[++i];
    } else if (a == "--momentum") {
      options.momentum = true;
    } else if (a == "--target" && i + 1 < argc) {
      options.target = std::atof(argv[++i]);
    } else if (a == "--seed" && i + 1 < argc) {
      options.seed = std::max(0LL, std::atoll(argv[++i]));
    } else {
      rest.push_back(argv[i]);
    }
  }
  const dtrain::bench::BenchArgs args =
      dtrain::bench::ParseBenchArgs(static_cast<int>(rest.size()), rest.data());
  JobCluster cluster(options.hosts, args);
  std::printf(
      "CPU: %s\n%s on Fashion-MNIST, sync ring, %d netns hosts x %d replica(s), global batch %d, "
      "%s, 1 thread a process\n",
      dtrain::bench::CpuModel().c_str(),
      options.cnn ? "CNN conv5x5x32-pool-conv5x5x64-pool-dense1024-dropout-dense10"
                  : "MLP 784-2048-2048-2048-10",
      options.hosts, options.per_host, kGlobalBatch, options.momentum ? "momentum SGD" : "Adam");
  if (!options.accuracy) {
    std::printf("%d steps a job, samples/s from the steps after the first quarter\n",
                options.steps);
  }
  std::fflush(stdout);
  if (options.accuracy) {
    Accuracy(cluster, options, args.only);
  } else {
    Throughput(cluster, options, args.only);
  }
  return 0;
}
