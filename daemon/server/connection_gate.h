// ConnectionGate: how many connections one of dtraind's listeners holds, in all and per client
// (a uid, or a remote address), so that no client can take the daemon's descriptors from the
// jobs and the other clients. A connection is held by its Ticket; it counts until the ticket
// goes (or, for its client's share, until it is exempted: root, an authenticated peer).
//
//   ConnectionGate gate({.total = 1024, .per_client = 64});
//   std::string why;
//   std::optional<ConnectionGate::Ticket> t = gate.Admit("uid 1001", &why);
//   if (!t) { /* close the connection at once, telling `why` where the protocol can */ }
//
// Invariants: open() <= caps().total, and no client holds more than caps().per_client counted
// tickets. A ticket may outlive its gate (the counts are shared). One thread at a time.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace dtrain::server {

struct ConnectionCaps {
  std::size_t total = 0;       // connections the listener holds at once
  std::size_t per_client = 0;  // of which one client's (counted) ones

  bool operator==(const ConnectionCaps&) const = default;
};

class ConnectionGate {
  struct Counts {
    ConnectionCaps caps;
    std::size_t open = 0;
    std::unordered_map<std::string, std::size_t> per_client;
    void Release(const std::string& client);
  };

 public:
  class Ticket {
   public:
    Ticket(Ticket&& other) noexcept = default;
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket();
    // Stops counting against the client's share (it still counts in the listener's total): for
    // a connection that has proven who it is and is trusted with more.
    void Exempt();

   private:
    friend class ConnectionGate;
    Ticket(std::shared_ptr<Counts> counts, std::string client, bool counted);
    void Drop();
    std::shared_ptr<Counts> counts_;
    std::string client_;
    bool counted_ = false;  // in the client's share
  };

  explicit ConnectionGate(ConnectionCaps caps);

  // A ticket for one more connection of `client`, or nullopt (with *why, a sentence saying which
  // cap was reached) when the listener, or unless `exempt` the client, is at its cap.
  std::optional<Ticket> Admit(const std::string& client, std::string* why, bool exempt = false);

  std::size_t open() const { return counts_->open; }
  const ConnectionCaps& caps() const { return counts_->caps; }

 private:
  std::shared_ptr<Counts> counts_;
};

}  // namespace dtrain::server
