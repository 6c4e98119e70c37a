#include "core/dist/partition_exchange.h"

#include <algorithm>
#include <string>
#include <vector>

namespace dtrain::dist {
namespace {

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

PartitionExchange::PartitionExchange(int part, int parts, Link* left, Link* right,
                                     PartitionExchangeOptions options)
    : part_(part), parts_(parts), left_(left), right_(right), options_(options) {
  if (parts_ > 1) {
    counters_[left_];  // both entries exist before the sender thread reads the map
    counters_[right_];
    sender_ = std::thread(&PartitionExchange::SenderLoop, this);
  }
}

PartitionExchange::~PartitionExchange() {
  if (!sender_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  sender_.join();
}

void PartitionExchange::SenderLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || job_; });
    if (stopping_) return;
    std::function<Status()> job = std::move(job_);
    job_ = nullptr;
    lock.unlock();
    Status result = job();
    lock.lock();
    done_ = std::move(result);
    wake_.notify_all();
  }
}

Deadline PartitionExchange::NewDeadline() const { return Clock::now() + options_.timeout; }

Status PartitionExchange::Check(Status status) {
  if (!status.ok() && failed_.ok()) failed_ = status;
  return status;
}

Status PartitionExchange::Send(Link* link, std::span<const float> data, Deadline deadline) {
  Counters& c = counters_.at(link);
  // On the sender thread too, but never while the caller touches waits_ (RingStep waits for it).
  waits_.bytes_sent += data.size_bytes();
  return link->Send(c.sent++, data, deadline);
}

Status PartitionExchange::Recv(Link* link, std::span<float> data, Deadline deadline) {
  Counters& c = counters_.at(link);
  return link->Recv(c.received++, data, deadline);
}

Status PartitionExchange::TimedSend(Link* link, std::span<const float> data) {
  if (!failed_.ok()) return failed_;
  const auto start = Clock::now();
  Status s = Send(link, data, NewDeadline());
  waits_.sending += SecondsSince(start);
  return Check(std::move(s));
}

Status PartitionExchange::TimedRecv(Link* link, std::span<float> data) {
  if (!failed_.ok()) return failed_;
  const auto start = Clock::now();
  Status s = Recv(link, data, NewDeadline());
  waits_.receiving += SecondsSince(start);
  return Check(std::move(s));
}

Status PartitionExchange::SendNext(std::span<const float> data) { return TimedSend(right_, data); }
Status PartitionExchange::SendPrev(std::span<const float> data) { return TimedSend(left_, data); }
Status PartitionExchange::RecvPrev(std::span<float> data) { return TimedRecv(left_, data); }
Status PartitionExchange::RecvNext(std::span<float> data) { return TimedRecv(right_, data); }

Status PartitionExchange::RingStep(std::span<const float> out, std::span<float> in,
                                   Deadline deadline) {
  double sending = 0.0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_.reset();
    job_ = [this, out, deadline, &sending] {
      const auto start = Clock::now();
      Status s = Send(right_, out, deadline);
      sending = SecondsSince(start);
      return s;
    };
  }
  wake_.notify_all();
  const auto start = Clock::now();
  Status received = Recv(left_, in, deadline);
  if (!received.ok()) right_->Close();  // the send may wait for a peer that is gone
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait(lock, [this] { return done_.has_value(); });
  waits_.receiving += SecondsSince(start);
  waits_.sending += sending;
  Status sent = std::move(*done_);
  done_.reset();
  return !received.ok() ? received : sent;
}

Status PartitionExchange::AllGather(std::span<float> data, std::span<const std::size_t> bounds) {
  if (!failed_.ok()) return failed_;
  const Deadline deadline = NewDeadline();
  const auto block = [&](int q) {
    const auto b = static_cast<std::size_t>(q);
    return data.subspan(bounds[b], bounds[b + 1] - bounds[b]);
  };
  // Step s: send block part - s to the right, receive block part - s - 1 from the left.
  for (int s = 0; s + 1 < parts_; ++s) {
    Status st = RingStep(block(Mod(part_ - s)), block(Mod(part_ - s - 1)), deadline);
    if (!st.ok()) return Check(std::move(st));
  }
  return Status::Ok();
}

Status PartitionExchange::ReduceScatter(std::span<float> data,
                                        std::span<const std::size_t> bounds) {
  if (!failed_.ok()) return failed_;
  const Deadline deadline = NewDeadline();
  std::size_t largest = 0;
  for (int q = 0; q < parts_; ++q) largest = std::max(largest, bounds[q + 1] - bounds[q]);
  std::vector<float> incoming(largest);
  const auto block = [&](int q) {
    const auto b = static_cast<std::size_t>(q);
    return data.subspan(bounds[b], bounds[b + 1] - bounds[b]);
  };
  // Step s: send the partial sum of block part - s - 1 to the right, receive that of block
  // part - s - 2 from the left and add this partition's own values into it. After parts - 1
  // steps block part has every partition's values, added in the order part + 1, part + 2, ...
  for (int s = 0; s + 1 < parts_; ++s) {
    std::span<float> out = block(Mod(part_ - s - 1));
    std::span<float> into = block(Mod(part_ - s - 2));
    std::span<float> in(incoming.data(), into.size());
    Status st = RingStep(out, in, deadline);
    if (!st.ok()) return Check(std::move(st));
    for (std::size_t i = 0; i < into.size(); ++i) into[i] = in[i] + into[i];
  }
  return Status::Ok();
}

Status PartitionExchange::AllReduceSum(std::span<float> data) {
  if (parts_ == 1) return Status::Ok();
  // Each partition's values, gathered in place of a copy per partition, then summed in order.
  std::vector<float> all(data.size() * static_cast<std::size_t>(parts_));
  std::vector<std::size_t> bounds(static_cast<std::size_t>(parts_) + 1);
  for (int q = 0; q <= parts_; ++q) bounds[q] = static_cast<std::size_t>(q) * data.size();
  std::copy(data.begin(), data.end(), all.begin() + static_cast<std::ptrdiff_t>(bounds[part_]));
  if (Status s = AllGather(all, bounds); !s.ok()) return s;
  std::fill(data.begin(), data.end(), 0.0f);
  for (int q = 0; q < parts_; ++q) {
    for (std::size_t i = 0; i < data.size(); ++i) data[i] += all[bounds[q] + i];
  }
  return Status::Ok();
}

PartitionExchange::Waits PartitionExchange::TakeWaits() { return std::exchange(waits_, {}); }

}  // namespace dtrain::dist
