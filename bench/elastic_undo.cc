// What the one-step undo of an elastic job's shards costs (core/dist/ps_protocol.md, "Several
// shards"): the same sync job on two parameter servers, static and elastic (min_workers set, so
// each shard copies its range and optimizer state before every step, to undo it should a member
// die between its pushes), run through `dtrain run` alternately, round after round; per round the
// elastic run's step time over the static one's, and once the shards' memory estimate
// (config::EstimateJobMemory) of both. No losses happen: this is the price of being ready for one.
//
//   bench_elastic_undo [--rounds N] [--epochs E] [--inputs I] DTRAIN_BIN JOB_FILE
//
// The estimate counts model.inputs, which a job on IDX or CSV files may leave to its data (then
// one input is counted): --inputs I sets it for the estimate (784 for Fashion-MNIST).
// JOB_FILE is a sync job (examples/fashion-mnist-sync.toml); the bench sets allreduce = "ps",
// servers = 2, workers = 2 and train.threads = 1 on both, and min_workers = 1 on the elastic one.
// A run's step time is the median of rank 0's step_seconds_p50 and its mean step (wall time
// between rank 0's first and last logged steps over the steps between them).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/cpu_model.h"
#include "bench/median.h"
#include "config/job_file.h"
#include "config/job_memory.h"

namespace {

using json = nlohmann::json;

struct Pace {
  double median = 0.0;  // seconds
  double mean = 0.0;
};

// The standard output of `argv` (through the shell, each argument single-quoted: none here holds
// a quote), or exits when it fails.
std::string Output(const std::vector<std::string>& argv) {
  std::string command;
  for (const std::string& a : argv) command += "'" + a + "' ";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) {
    std::perror("popen");
    std::exit(1);
  }
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status != 0) {
    std::fprintf(stderr, "failed (%d): %s\n%s\n", status, command.c_str(), out.c_str());
    std::exit(1);
  }
  return out;
}

std::vector<std::string> Sets(int epochs, bool elastic) {
  std::vector<std::string> sets = {"cluster.allreduce=ps", "cluster.servers=2", "cluster.workers=2",
                                   "train.threads=1", "train.epochs=" + std::to_string(epochs)};
  if (elastic) sets.push_back("cluster.min_workers=1");
  return sets;
}

Pace Run(const std::string& dtrain, const std::string& job_file, const std::string& db, int epochs,
         bool elastic) {
  std::filesystem::remove(db);
  std::vector<std::string> argv = {dtrain, "run", job_file, "--db", db, "--json"};
  for (const std::string& s : Sets(epochs, elastic)) {
    argv.push_back("--set");
    argv.push_back(s);
  }
  const json outcome = json::parse(Output(argv));
  if (outcome["state"] != "succeeded") {
    std::fprintf(stderr, "the run did not succeed: %s\n", outcome.dump().c_str());
    std::exit(1);
  }
  const json points = json::parse(Output(
      {dtrain, "metrics", "1", "--db", db, "--format", "json", "--name", "step_seconds_p50"}));
  std::vector<double> p50;
  double first_time = 0.0, last_time = 0.0;
  std::int64_t first_step = -1, last_step = 0;
  for (const json& p : points) {
    if (p["name"] != "step_seconds_p50" || p["worker"] != 0) continue;
    p50.push_back(p["value"].get<double>());
    const std::int64_t step = p["step"].get<std::int64_t>();
    const double time = p["time"].get<double>();
    if (first_step < 0) first_step = step, first_time = time;
    last_step = step, last_time = time;
  }
  if (p50.size() < 2 || last_step <= first_step) {
    std::fprintf(stderr, "too few logged steps\n");
    std::exit(1);
  }
  return {dtrain::bench::Median(p50),
          (last_time - first_time) / static_cast<double>(last_step - first_step)};
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3, epochs = 2, inputs = 0;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (a == "--epochs" && i + 1 < argc) {
      epochs = std::atoi(argv[++i]);
    } else if (a == "--inputs" && i + 1 < argc) {
      inputs = std::atoi(argv[++i]);
    } else {
      args.push_back(a);
    }
  }
  if (args.size() != 2 || rounds < 1 || epochs < 1 || inputs < 0) {
    std::fprintf(
        stderr,
        "usage: bench_elastic_undo [--rounds N] [--epochs E] [--inputs I] DTRAIN_BIN JOB_FILE\n");
    return 2;
  }
  const std::string& dtrain = args[0];
  const std::string& job_file = args[1];

  std::printf("CPU: %s, %ld cores; %d epochs a run, %d rounds\n", dtrain::bench::CpuModel().c_str(),
              ::sysconf(_SC_NPROCESSORS_ONLN), epochs, rounds);
  std::uint64_t shard[2] = {0, 0};
  for (const bool elastic : {false, true}) {
    std::vector<std::string> sets = Sets(epochs, elastic);
    if (inputs > 0) sets.push_back("model.inputs=" + std::to_string(inputs));
    const dtrain::config::LoadResult loaded = dtrain::config::LoadJobFile(
        job_file, sets, {.files = dtrain::config::DataFiles::kUnchecked});
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s: %s\n", job_file.c_str(),
                   loaded.diagnostics.front().message.c_str());
      return 1;
    }
    const dtrain::config::JobMemory m = dtrain::config::EstimateJobMemory(*loaded.job);
    shard[elastic] = m.shard;
    std::printf("memory estimate, %s: %s a shard (%llu bytes), %s a replica, %s the host\n",
                elastic ? "elastic" : "static ", dtrain::config::FormatBytes(m.shard).c_str(),
                static_cast<unsigned long long>(m.shard),
                dtrain::config::FormatBytes(m.replica).c_str(),
                dtrain::config::FormatBytes(m.host).c_str());
  }
  std::printf("the undo adds %llu bytes a shard (%.2fx the static shard's estimate)\n\n",
              static_cast<unsigned long long>(shard[1] - shard[0]),
              static_cast<double>(shard[1]) / static_cast<double>(shard[0]));

  const std::string dir =
      std::filesystem::temp_directory_path() / ("bench-elastic-undo-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::printf(
      "| round | static median / mean step | elastic median / mean step | elastic / static "
      "(median, mean) |\n|---|---:|---:|---:|\n");
  std::vector<double> median_ratios, mean_ratios;
  for (int round = 1; round <= rounds; ++round) {
    // Alternating which goes first, so that a drift of the machine's pace favours neither.
    Pace pace[2];
    for (const bool elastic : {round % 2 == 0, round % 2 != 0}) {
      pace[elastic] = Run(dtrain, job_file, dir + "/run.db", epochs, elastic);
    }
    median_ratios.push_back(pace[1].median / pace[0].median);
    mean_ratios.push_back(pace[1].mean / pace[0].mean);
    std::printf("| %d | %.3f / %.3f ms | %.3f / %.3f ms | %.3f, %.3f |\n", round,
                pace[0].median * 1e3, pace[0].mean * 1e3, pace[1].median * 1e3, pace[1].mean * 1e3,
                median_ratios.back(), mean_ratios.back());
    std::fflush(stdout);
  }
  std::printf("median of the rounds' ratios: %.3f (median step), %.3f (mean step)\n",
              dtrain::bench::Median(median_ratios), dtrain::bench::Median(mean_ratios));
  std::filesystem::remove_all(dir);
  return 0;
}
