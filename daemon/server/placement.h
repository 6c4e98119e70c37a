// Placement: which node runs each process of a job — this daemon's host or one of its peers —
// from the job's [cluster] hosts or placement and what the nodes have.
//
//   Placed p = PlaceJob(job.cluster, job.threads, {{"node-1", "", 8, true},
//                                                  {"node-2", "10.0.0.2:7070", 8, true}});
//   if (!p.ok()) job waits (p.wait) or fails (p.error);   p.nodes[rank] is a node name
//
// Each training process (a replica, or with model parallelism one partition of one) needs at
// least one core (train.threads when set); shards are not counted. "replicas" below means those.
//   hosts = [...]       process r runs on hosts[r % size]; every name must be a node, and each
//                       node must have the cores for its replicas.
//   placement = "pack"  replicas fill the first node (this daemon's) up to its cores, then the
//                       next; shards go where replica 0 is.
//   placement = "spread" replicas, then shards, go round-robin over the nodes that are up.
// A node that is down, or a cluster without the cores, makes the job wait, saying why; so does a
// name that is no node while some peer has never answered (it may be that one); otherwise such a
// name fails the job. Pure function: safe for concurrent use.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/job.h"

namespace dtrain::server {

struct NodeCapacity {
  std::string name;
  std::string address;  // its daemon's listener, HOST:PORT (empty for this daemon's own node)
  int cores = 0;
  bool up = false;
  bool named = true;  // false: a peer that never answered, known only by its address
};

struct Placed {
  std::vector<std::string> nodes;  // by rank: replicas, then shards
  std::string wait;                // set: the job cannot start yet, and why
  std::string error;               // set: the job can never start here, and why

  bool ok() const { return wait.empty() && error.empty(); }
};

// `nodes` starts with this daemon's own node (always up), then its peers.
Placed PlaceJob(const config::ClusterConfig& cluster, int threads,
                const std::vector<NodeCapacity>& nodes);

// Cores a job holds on this host while it runs: its `local_replicas` replicas' threads (all the
// host's cores when train.threads is auto), capped at the host's `host_cores` (a job larger than
// the host runs alone, oversubscribed). Shards mostly wait and are not counted.
int JobCores(const config::JobConfig& job, int host_cores, int local_replicas);

// An elastic job (cluster.min_workers) starts with, or grows to, the most replicas that fit: the
// largest n from `most` down to `fewest` for which `fits(n)`, asked in that order and no further
// once it answers true; 0 when none does.
int MostThatFit(int most, int fewest, const std::function<bool(int)>& fits);

}  // namespace dtrain::server
