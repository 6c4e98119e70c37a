#include "core/dist/local_link.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <utility>

#include "core/duration_text.h"

namespace dtrain::dist {
namespace {

struct Message {
  std::uint32_t tag;
  std::vector<float> values;
};

// What both ends share. Each end holds a reference, so either may go first (the shared state is
// the one thing two independently destroyed objects co-own).
struct Channel {
  explicit Channel(std::size_t capacity_bytes) : capacity(capacity_bytes) {}

  const std::size_t capacity;
  std::mutex mu;
  std::condition_variable changed;           // any queue or `closed_by` changed
  std::array<std::deque<Message>, 2> inbox;  // inbox[e]: messages on their way to end e
  std::array<std::size_t, 2> queued_bytes{};
  int closed_by = -1;  // the end that closed first, or -1
};

class LocalLink final : public Link {
 public:
  LocalLink(std::shared_ptr<Channel> channel, int end, std::string peer)
      : channel_(std::move(channel)), end_(end), peer_(std::move(peer)) {}
  ~LocalLink() override { Close(); }

  Status Send(std::uint32_t tag, std::span<const float> data, Deadline deadline) override {
    const Clock::time_point start = Clock::now();
    const int to = 1 - end_;
    const std::size_t bytes = data.size_bytes();
    std::unique_lock lock(channel_->mu);
    const bool ready = channel_->changed.wait_until(lock, deadline, [&] {
      return channel_->closed_by >= 0 || channel_->inbox[to].empty() ||
             channel_->queued_bytes[to] + bytes <= channel_->capacity;
    });
    if (channel_->closed_by >= 0) return ClosedError();
    if (!ready) {
      return Status::Error("timeout: could not send " + std::to_string(data.size()) +
                           " floats to " + peer_ + " within " + Ms(deadline - start) +
                           " (it is not receiving)");
    }
    channel_->inbox[to].push_back({tag, std::vector<float>(data.begin(), data.end())});
    channel_->queued_bytes[to] += bytes;
    channel_->changed.notify_all();
    return Status::Ok();
  }

  Result<std::uint32_t> RecvAnyTag(std::span<float> out, Deadline deadline) override {
    const Clock::time_point start = Clock::now();
    std::deque<Message>& inbox = channel_->inbox[end_];
    std::unique_lock lock(channel_->mu);
    channel_->changed.wait_until(lock, deadline,
                                 [&] { return !inbox.empty() || channel_->closed_by >= 0; });
    // What the peer sent before closing still arrives, as over TCP.
    if (channel_->closed_by == end_ || (inbox.empty() && channel_->closed_by >= 0)) {
      return ClosedError();
    }
    if (inbox.empty()) {
      return Status::Error("timeout: no message within " + Ms(deadline - start) + " from " + peer_);
    }
    Message m = std::move(inbox.front());
    inbox.pop_front();
    channel_->queued_bytes[end_] -= m.values.size() * sizeof(float);
    channel_->changed.notify_all();
    lock.unlock();
    if (m.values.size() != out.size()) {
      return Status::Error("unexpected message: expected " + std::to_string(out.size()) +
                           " floats from " + peer_ + ", got " + std::to_string(m.values.size()) +
                           " floats tagged " + std::to_string(m.tag));
    }
    std::copy(m.values.begin(), m.values.end(), out.begin());
    return m.tag;
  }

  bool Readable() override {
    std::lock_guard lock(channel_->mu);
    return !channel_->inbox[end_].empty() || channel_->closed_by >= 0;
  }

  void Close() override {
    std::lock_guard lock(channel_->mu);
    if (channel_->closed_by < 0) channel_->closed_by = end_;
    channel_->changed.notify_all();
  }

  const std::string& peer() const override { return peer_; }

 private:
  // Call with the lock held and closed_by set.
  Status ClosedError() const {
    if (channel_->closed_by == end_)
      return Status::Error("closed: the link to " + peer_ + " is closed");
    return Status::Error("closed: " + peer_ + " closed the link");
  }

  std::shared_ptr<Channel> channel_;
  const int end_;  // 0 or 1
  const std::string peer_;
};

}  // namespace

LocalLinkPair MakeLocalLinkPair(std::string name_a, std::string name_b,
                                std::size_t capacity_bytes) {
  auto channel = std::make_shared<Channel>(capacity_bytes);
  return {std::make_unique<LocalLink>(channel, 0, std::move(name_b)),
          std::make_unique<LocalLink>(channel, 1, std::move(name_a))};
}

std::vector<RingLinks> MakeLocalRing(int world, std::size_t capacity_bytes) {
  std::vector<RingLinks> ring(static_cast<std::size_t>(std::max(world, 0)));
  const auto name = [](int rank) { return "rank " + std::to_string(rank) + " (in-process)"; };
  if (world == 2) {
    LocalLinkPair p = MakeLocalLinkPair(name(0), name(1), capacity_bytes);
    ring[0].left = ring[0].right = p.a.get();
    ring[1].left = ring[1].right = p.b.get();
    ring[0].owned.push_back(std::move(p.a));
    ring[1].owned.push_back(std::move(p.b));
    return ring;
  }
  if (world < 3) return ring;
  for (int r = 0; r < world; ++r) {
    const int next = (r + 1) % world;
    LocalLinkPair p = MakeLocalLinkPair(name(r), name(next), capacity_bytes);
    RingLinks& mine = ring[static_cast<std::size_t>(r)];
    RingLinks& theirs = ring[static_cast<std::size_t>(next)];
    mine.right = p.a.get();
    theirs.left = p.b.get();
    mine.owned.push_back(std::move(p.a));
    theirs.owned.push_back(std::move(p.b));
  }
  return ring;
}

}  // namespace dtrain::dist
