// Helpers for strategy tests: a small model and data set, and training N replicas of it — as
// threads over an in-process ring, or one replica over links a test made — with a strategy the
// test chooses, returning each replica's final parameters.
//
//   auto finals = TrainReplicasAsThreads(model, set, 3, OptionsFor, MakeSync);
//   BOOST_TEST((finals[1].value() == finals[0].value()));
//
// For parameter-server strategies: links between workers and shards (in-process or TCP on
// 127.0.0.1), shards loaded with the model's initial values, and ServePs, which runs the shards
// and the workers as threads:
//   PsLinks links = MakeLocalPsLinks(3, 2);
//   auto shards = MakeShards(model, seed, 3, 2, PsMode::kSync, optimizer);
//   std::vector<Status> served = ServePs(links, shards, [&](int rank, std::span<Link* const> l) {
//     ...  // rank's strategy over l, its links to the shards
//   });
//
// One thread at a time (it starts and joins its own threads).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "core/data/readers.h"
#include "core/dist/local_link.h"
#include "core/dist/parameter_shard.h"
#include "core/dist/ring_allreduce.h"
#include "core/dist/shard_ranges.h"
#include "core/dist/tcp_link.h"
#include "core/net/frame_stream.h"
#include "core/train/trainer.h"

namespace dtrain::dist::testing {

inline model::ModelSpec SmallSpec() {
  model::ModelSpec s;
  s.type = model::ModelType::kMlp;
  s.inputs = 6;
  s.hidden = {12};
  s.activation = math::Activation::kTanh;
  s.outputs = 3;
  s.loss = model::LossType::kSoftmaxCrossEntropy;
  return s;
}

// SmallSpec's problem as a sequential model with batchnorm between its dense layers: one range of
// running statistics, which each replica keeps its own of.
inline model::ModelSpec BatchNormSpec() {
  model::ModelSpec spec = SmallSpec();
  spec.type = model::ModelType::kSequential;
  spec.input_shape = {6, 1, 1};
  spec.layers = {{.kind = model::LayerKind::kDense, .units = 12},
                 {.kind = model::LayerKind::kBatchNorm},
                 {.kind = model::LayerKind::kActivation, .activation = math::Activation::kTanh},
                 {.kind = model::LayerKind::kDense, .units = 3}};
  return spec;
}

inline data::Dataset Blobs(std::size_t rows) {
  data::BlobsOptions blobs;
  blobs.rows = rows;
  blobs.features = 6;
  blobs.classes = 3;
  return data::MakeBlobs(blobs);
}

inline double MaxRelativeDifference(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]) /
                                std::max(1.0, std::abs(static_cast<double>(b[i]))));
  }
  return worst;
}

// Replica `rank` of `world` in the synchronous tests: `batch` rows of each global batch, seed 4,
// weight decay 1e-3, lr 0.05, for `epochs` epochs.
inline train::TrainOptions GlobalBatchOptions(int batch, int rank, int world,
                                              std::int64_t epochs = 2) {
  train::TrainOptions o;
  o.epochs = epochs;
  o.batch_size = batch;
  o.seed = 4;
  o.weight_decay = 1e-3f;
  o.schedule.lr = 0.05f;
  o.rank = rank;
  o.world_size = world;
  o.sharding = data::ShardMode::kGlobalBatches;
  return o;
}

// The default options of an optimizer of `type`.
inline optim::OptimizerOptions OptimizerOfType(optim::OptimizerType type) {
  optim::OptimizerOptions o;
  o.type = type;
  return o;
}

// Makes replica `rank`'s strategy over its ring.
using StrategyFactory = std::function<std::unique_ptr<train::Strategy>(
    RingAllReduce& ring, int rank, int world, std::size_t params)>;
// The train options of replica `rank` of `world`.
using OptionsFactory = std::function<train::TrainOptions(int rank, int world)>;

inline Result<std::vector<float>> TrainReplica(const model::Model& model, const data::Dataset& set,
                                               int rank, int world, const RingLinks& links,
                                               const OptionsFactory& options,
                                               const StrategyFactory& make) {
  RingAllReduce ring(rank, world, links.left, links.right);
  std::unique_ptr<train::Strategy> strategy = make(ring, rank, world, model.NumParams());
  train::Trainer trainer(model, options(rank, world), set, nullptr, data::ConstantScaling(1.0f),
                         *strategy);
  trainer.InitParams();
  train::NullListener listener;
  auto why = trainer.Run(listener);
  if (!why.ok()) return why.status();
  return std::vector<float>(trainer.params().begin(), trainer.params().end());
}

inline std::vector<Result<std::vector<float>>> TrainReplicasAsThreads(
    const model::Model& model, const data::Dataset& set, int world, const OptionsFactory& options,
    const StrategyFactory& make) {
  std::vector<RingLinks> links = MakeLocalRing(world);
  std::vector<Result<std::vector<float>>> finals(static_cast<std::size_t>(world),
                                                 Status::Error("not run"));
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back(
        [&, r] { finals[r] = TrainReplica(model, set, r, world, links[r], options, make); });
  }
  for (std::thread& t : ranks) t.join();
  return finals;
}

// ---- Parameter-server strategies ------------------------------------------------------------

// Trains one replica with a strategy the caller built and keeps. `before_run` (may be empty) runs
// after InitParams with the trainer's parameters, e.g. a strategy's Connect, which may replace
// them; `listener` may be null (a NullListener). Returns the final parameters.
inline Result<std::vector<float>> TrainWithStrategy(
    const model::Model& model, const data::Dataset& set, const train::TrainOptions& options,
    train::Strategy& strategy, const std::function<Status(std::span<float>)>& before_run = {},
    train::TrainListener* listener = nullptr) {
  train::Trainer trainer(model, options, set, nullptr, data::ConstantScaling(1.0f), strategy);
  trainer.InitParams();
  if (before_run) {
    if (Status s = before_run(trainer.params()); !s.ok()) return s;
  }
  train::NullListener quiet;
  auto why = trainer.Run(listener != nullptr ? *listener : quiet);
  if (!why.ok()) return why.status();
  return std::vector<float>(trainer.params().begin(), trainer.params().end());
}

// Links between `workers` workers and `shards` shards: worker[r][k] and shard[k][r] are the two
// ends of one link.
struct PsLinks {
  std::vector<std::vector<Link*>> worker;  // worker[r][k]: rank r's link to shard k
  std::vector<std::vector<Link*>> shard;   // shard[k][r]: shard k's link to rank r
  std::vector<std::unique_ptr<Link>> owned;
};

inline PsLinks EmptyPsLinks(int workers, int shards) {
  PsLinks links;
  links.worker.assign(static_cast<std::size_t>(workers),
                      std::vector<Link*>(static_cast<std::size_t>(shards)));
  links.shard.assign(static_cast<std::size_t>(shards),
                     std::vector<Link*>(static_cast<std::size_t>(workers)));
  return links;
}

// In-process links; errors name the ends "worker rank R (in-process)" and "shard K (in-process)".
inline PsLinks MakeLocalPsLinks(int workers, int shards) {
  PsLinks links = EmptyPsLinks(workers, shards);
  for (int r = 0; r < workers; ++r) {
    for (int k = 0; k < shards; ++k) {
      LocalLinkPair p = MakeLocalLinkPair("worker rank " + std::to_string(r) + " (in-process)",
                                          "shard " + std::to_string(k) + " (in-process)");
      links.worker[r][k] = p.a.get();
      links.shard[k][r] = p.b.get();
      links.owned.push_back(std::move(p.a));
      links.owned.push_back(std::move(p.b));
    }
  }
  return links;
}

// TcpLinks over 127.0.0.1, one connection per (worker, shard); ids as in a job: workers 0..N-1,
// shards N..N+K-1. Empty on failure (with a message in *error).
inline PsLinks MakeTcpPsLinks(int workers, int shards, std::string* error) {
  using namespace std::chrono_literals;
  PsLinks links = EmptyPsLinks(workers, shards);
  const auto fail = [&](std::string what) {
    *error = std::move(what);
    return PsLinks{};
  };
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listener < 0) return fail("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if (::bind(listener, sa, len) != 0 || ::listen(listener, 16) != 0 ||
      ::getsockname(listener, sa, &len) != 0) {
    ::close(listener);
    return fail("listen on 127.0.0.1");
  }
  const std::uint16_t port = ntohs(addr.sin_port);
  for (int r = 0; r < workers; ++r) {
    for (int k = 0; k < shards; ++k) {
      // The kernel completes the handshake into the backlog, so one thread connects, then accepts.
      Result<net::FrameStream> out = net::FrameStream::ConnectTcp("127.0.0.1", port, 5s);
      if (!out.ok()) {
        ::close(listener);
        return fail(out.status().message());
      }
      pollfd p{.fd = listener, .events = POLLIN, .revents = 0};
      const int fd =
          ::poll(&p, 1, 5000) == 1 ? ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC) : -1;
      if (fd < 0) {
        ::close(listener);
        return fail("accept");
      }
      const int shard_id = workers + k;
      auto w = TcpLink::Create(std::move(out).value(), r, shard_id);
      auto s = TcpLink::Create(net::FrameStream(fd), shard_id, r);
      if (!w.ok() || !s.ok()) {
        ::close(listener);
        return fail("TcpLink::Create");
      }
      links.worker[r][k] = w.value().get();
      links.shard[k][r] = s.value().get();
      links.owned.push_back(std::move(w).value());
      links.owned.push_back(std::move(s).value());
    }
  }
  ::close(listener);
  return links;
}

// `shards` shards over the model's parameters, loaded with model.Init(seed) (what every replica's
// InitParams computes).
inline std::vector<std::unique_ptr<ParameterShard>> MakeShards(
    const model::Model& model, std::uint64_t seed, int workers, int shards, PsMode mode,
    const optim::OptimizerOptions& optimizer, int max_staleness = 0,
    std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  const std::size_t n = model.NumParams();
  std::vector<float> initial(n);
  model.Init(initial, seed);
  const std::vector<ShardRange> ranges = ShardRanges(n, shards);
  std::vector<std::unique_ptr<ParameterShard>> out;
  for (int k = 0; k < shards; ++k) {
    const ShardRange& r = ranges[static_cast<std::size_t>(k)];
    auto shard = std::make_unique<ParameterShard>(ShardOptions{.shard = k,
                                                               .shards = shards,
                                                               .begin = r.begin,
                                                               .end = r.end,
                                                               .num_params = n,
                                                               .workers = workers,
                                                               .mode = mode,
                                                               .max_staleness = max_staleness,
                                                               .optimizer = optimizer,
                                                               .timeout = timeout});
    if (Status s = shard->Load(std::span<const float>(initial).subspan(r.begin, r.size()));
        !s.ok()) {
      return {};
    }
    out.push_back(std::move(shard));
  }
  return out;
}

// Runs every shard's Serve and `worker(rank, rank's links to the shards)` for every rank, each on
// its own thread; returns each shard's Serve status once all have ended.
inline std::vector<Status> ServePs(
    const PsLinks& links, std::vector<std::unique_ptr<ParameterShard>>& shards,
    const std::function<void(int rank, std::span<Link* const> shard_links)>& worker) {
  std::vector<Status> served(shards.size(), Status::Error("not run"));
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < shards.size(); ++k) {
    threads.emplace_back([&, k] { served[k] = shards[k]->Serve(links.shard[k]); });
  }
  for (std::size_t r = 0; r < links.worker.size(); ++r) {
    threads.emplace_back([&, r] { worker(static_cast<int>(r), links.worker[r]); });
  }
  for (std::thread& t : threads) t.join();
  return served;
}

// The shards' ranges put together: the whole parameter vector.
inline std::vector<float> ShardParams(const std::vector<std::unique_ptr<ParameterShard>>& shards) {
  std::vector<float> all;
  for (const auto& s : shards) all.insert(all.end(), s->params().begin(), s->params().end());
  return all;
}

}  // namespace dtrain::dist::testing
