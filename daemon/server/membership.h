// Membership: what this daemon knows of its peer daemons ([cluster] peers), learnt by heartbeats.
// One thread per peer keeps an authenticated connection to the peer's TCP listener and sends a
// `node_heartbeat` every `interval`; the peer answers with its own state (name, cores, jobs). A
// peer is up from its first answer; it is down, since the moment it stopped answering, when a
// connection cannot be made or authenticated or an answer does not come within `timeout` — so a
// dead or unreachable peer shows as down within interval + timeout.
//
//   Membership peers({"10.0.0.2:7070"}, &key, "node-1", {});
//   peers.Start();
//   for (const PeerState& p : peers.Snapshot()) ...   // p.up, p.since, p.cores, p.running
//
// Snapshot is safe for concurrent use; Start once; the destructor stops and joins the threads
// (within one timeout). The key must outlive this object.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/net/auth.h"

namespace dtrain::server {

struct PeerState {
  std::string address;      // as configured: "HOST:PORT"
  std::string name;         // what the peer calls itself; empty until it first answered
  bool up = false;
  double since = 0.0;       // unix time of the last change between up and down (start: down)
  double last_seen = 0.0;   // unix time of its last answer; 0: never
  int cores = 0;            // as of its last answer
  int running = 0;
  int queued = 0;
  std::string error;        // why it is down (empty while up)
};

struct MembershipOptions {
  std::chrono::milliseconds interval{1000};  // between heartbeats
  std::chrono::milliseconds timeout{2000};   // for a connection, its handshake, or an answer
};

class Membership {
 public:
  Membership(std::vector<std::string> peers, const net::ClusterKey* key, std::string self_name,
             MembershipOptions options);
  ~Membership();
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  void Start();
  std::vector<PeerState> Snapshot() const;

 private:
  void Watch(std::size_t index);
  void MarkDown(std::size_t index, std::string why);
  // Sleeps for `d` or until the destructor runs; false once stopping.
  bool Pause(std::chrono::milliseconds d);

  const net::ClusterKey* const key_;  // owned by the daemon, which outlives this object
  const std::string self_name_;
  const MembershipOptions options_;
  mutable std::mutex mu_;
  std::vector<PeerState> peers_;  // guarded by mu_
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace dtrain::server
