#include "daemon/server/connection_gate.h"

#include <utility>

namespace dtrain::server {

void ConnectionGate::Counts::Release(const std::string& client) {
  const auto found = per_client.find(client);
  if (found != per_client.end() && --found->second == 0) per_client.erase(found);
}

ConnectionGate::Ticket::Ticket(std::shared_ptr<Counts> counts, std::string client, bool counted)
    : counts_(std::move(counts)), client_(std::move(client)), counted_(counted) {}

ConnectionGate::Ticket& ConnectionGate::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    Drop();
    counts_ = std::move(other.counts_);
    client_ = std::move(other.client_);
    counted_ = std::exchange(other.counted_, false);
  }
  return *this;
}

ConnectionGate::Ticket::~Ticket() { Drop(); }

void ConnectionGate::Ticket::Exempt() {
  if (counts_ && counted_) counts_->Release(client_);
  counted_ = false;
}

void ConnectionGate::Ticket::Drop() {
  if (!counts_) return;
  Exempt();
  --counts_->open;
  counts_.reset();
}

ConnectionGate::ConnectionGate(ConnectionCaps caps) : counts_(std::make_shared<Counts>()) {
  counts_->caps = caps;
}

std::optional<ConnectionGate::Ticket> ConnectionGate::Admit(const std::string& client,
                                                            std::string* why, bool exempt) {
  Counts& c = *counts_;
  if (c.open >= c.caps.total) {
    *why = "this listener holds its most connections at once (" + std::to_string(c.caps.total) +
           "); try again later";
    return std::nullopt;
  }
  if (!exempt) {
    std::size_t& mine = c.per_client[client];
    if (mine >= c.caps.per_client) {
      if (mine == 0) c.per_client.erase(client);
      *why = client + " holds the most connections one client may (" +
             std::to_string(c.caps.per_client) + "); close some and try again";
      return std::nullopt;
    }
    ++mine;
  }
  ++c.open;
  return Ticket(counts_, client, !exempt);
}

}  // namespace dtrain::server
