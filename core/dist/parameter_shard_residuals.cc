// ParameterShard's part in a compressed sync job's checkpoint: collecting every worker's
// error-feedback residual slice for rank 0 (ps_protocol.md, "Residuals"; residual_deposits.h).
#include <string>
#include <utility>

#include "core/dist/parameter_shard.h"

namespace dtrain::dist {

Status ParameterShard::CollectResiduals(std::span<Link* const> links,
                                        std::vector<std::optional<PushDecoder>>& greeted,
                                        const PsHeader& first,
                                        std::optional<std::uint64_t> next_step,
                                        std::span<float> scratch, ResidualDeposits& deposits) {
  const std::string at =
      "the residuals of the checkpoint before step " + std::to_string(first.clock);
  if (next_step && first.clock != *next_step) {
    return Status::Error(name_ + ": " + at + ": " + Worker(0) + " sent it where the next step is " +
                         std::to_string(*next_step));
  }
  deposits.Begin(first.clock);
  constexpr std::uint32_t kRequest = PsRequestTag(PsMessage::kResidual);
  for (std::size_t r = 0; r < links.size(); ++r) {
    const int rank = static_cast<int>(r);
    PsHeader h = first;
    if (r > 0) {
      Result<std::pair<std::uint32_t, PsHeader>> request =
          ReceiveRequest(*links[r], rank, at + ": waiting for " + Worker(rank) + "'s");
      // Before any step a worker's hello may still be unread: answer it, as ServeSync would.
      while (request.ok() && request.value().first == PsRequestTag(PsMessage::kHello) &&
             !greeted[r]) {
        Status s = AnswerHello(*links[r], rank, request.value().second, greeted[r].emplace(),
                               params_, Stats().global_clock, optimizer_->steps());
        if (!s.ok()) return s;
        request = ReceiveRequest(*links[r], rank, at + ": waiting for " + Worker(rank) + "'s");
      }
      if (!request.ok()) return request.status();
      if (request.value().first != kRequest || !greeted[r]) {
        return Unexpected(rank, request.value().first, at);
      }
      h = request.value().second;
    }
    Status got = links[r]->Recv(PsDataTag(kRequest), scratch, Clock::now() + options_.timeout);
    if (got.ok()) got = deposits.Deposit(rank, h.clock, scratch);
    if (!got.ok()) return Fail(at, got);
  }
  PsHeader reply;
  reply.from = static_cast<std::uint32_t>(options_.shard);
  reply.clock = first.clock;
  reply.begin = options_.begin;
  reply.end = options_.end;
  reply.workers = static_cast<std::uint32_t>(options_.workers);
  // Rank 0, the checkpoint's writer, receives every worker's slice; the others an answer.
  const std::vector<std::span<const float>> slices = deposits.Slices();
  Status sent = SendReply(*links[0], 0, PsMessage::kResidual, reply, slices, at);
  for (std::size_t r = 1; sent.ok() && r < links.size(); ++r) {
    sent = SendReply(*links[r], static_cast<int>(r), PsMessage::kResidual, reply, {}, at);
  }
  deposits.Clear();
  return sent;
}

}  // namespace dtrain::dist
