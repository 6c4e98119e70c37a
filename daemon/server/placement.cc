#include "daemon/server/placement.h"

#include <algorithm>
#include <map>

#include "config/thread_layout.h"

namespace dtrain::server {
namespace {

std::string Names(const std::vector<NodeCapacity>& nodes) {
  std::string out;
  for (const NodeCapacity& n : nodes) out += (out.empty() ? "" : ", ") + n.name;
  return out;
}

// Every node that runs replicas has the cores for them (`per_replica` each).
std::string CoresShortfall(const std::vector<std::string>& placed, int replicas, int per_replica,
                           const std::vector<NodeCapacity>& nodes) {
  std::map<std::string, int> needed;
  for (int r = 0; r < replicas; ++r) needed[placed[static_cast<std::size_t>(r)]] += per_replica;
  for (const NodeCapacity& n : nodes) {
    auto it = needed.find(n.name);
    if (it != needed.end() && it->second > n.cores) {
      return "waiting for cores: needs " + std::to_string(it->second) + " on " + n.name +
             ", which has " + std::to_string(n.cores);
    }
  }
  return "";
}

}  // namespace

int JobCores(const config::JobConfig& job, int host_cores, int local_replicas) {
  if (local_replicas == 0) return 0;
  const int threads = config::ThreadsPerReplica(job, local_replicas, host_cores);
  return std::clamp(local_replicas * threads, 1, std::max(1, host_cores));
}

Placed PlaceJob(const config::ClusterConfig& cluster, int threads,
                const std::vector<NodeCapacity>& nodes) {
  Placed p;
  // Trainers are placed alike whether they are whole replicas or partitions of one; a replica's
  // partitions have consecutive ranks, so "pack" keeps them together while cores last.
  const int replicas = cluster.Trainers();
  const int count = cluster.Processes();
  const int per_replica = std::max(1, threads);
  if (!cluster.hosts.empty()) {
    for (const std::string& host : cluster.hosts) {
      auto node = std::find_if(nodes.begin(), nodes.end(),
                               [&](const NodeCapacity& n) { return n.name == host; });
      if (node == nodes.end()) {
        const bool unheard = std::any_of(nodes.begin(), nodes.end(),
                                         [](const NodeCapacity& n) { return !n.named; });
        (unheard ? p.wait : p.error) =
            unheard ? "waiting for host " + host + ": not every peer has answered yet"
                    : "cluster.hosts names " + host + ", which is not a node of this cluster (" +
                          Names(nodes) + ")";
        return p;
      }
      if (!node->up) {
        p.wait = "waiting for host " + host + " (down)";
        return p;
      }
    }
    for (int r = 0; r < count; ++r) {
      p.nodes.push_back(cluster.hosts[static_cast<std::size_t>(r) % cluster.hosts.size()]);
    }
    p.wait = CoresShortfall(p.nodes, replicas, per_replica, nodes);
    return p;
  }
  std::vector<const NodeCapacity*> up;
  int cores = 0;
  for (const NodeCapacity& n : nodes) {
    if (!n.up) continue;
    up.push_back(&n);
    cores += n.cores;
  }
  if (cluster.placement == config::PlacementPolicy::kSpread) {
    for (int r = 0; r < count; ++r) p.nodes.push_back(up[static_cast<std::size_t>(r) % up.size()]->name);
    p.wait = CoresShortfall(p.nodes, replicas, per_replica, nodes);
    return p;
  }
  if (replicas * per_replica > cores && up.size() > 1) {
    p.wait = "waiting for cores: needs " + std::to_string(replicas * per_replica) +
             ", the nodes that are up have " + std::to_string(cores);
    return p;
  }
  // Pack: fill each node in turn; a job larger than a lone host still runs there (oversubscribed).
  std::size_t node = 0;
  int used = 0;
  for (int r = 0; r < replicas; ++r) {
    while (up.size() > 1 && node + 1 < up.size() && used + per_replica > up[node]->cores) {
      ++node;
      used = 0;
    }
    p.nodes.push_back(up[node]->name);
    used += per_replica;
  }
  for (int s = replicas; s < count; ++s) p.nodes.push_back(p.nodes.front());
  return p;
}

int MostThatFit(int most, int fewest, const std::function<bool(int)>& fits) {
  for (int n = most; n >= fewest && n > 0; --n) {
    if (fits(n)) return n;
  }
  return 0;
}

}  // namespace dtrain::server
