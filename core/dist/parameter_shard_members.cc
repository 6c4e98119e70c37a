// ParameterShard's elastic memberships (options.elastic; ps_protocol.md, "Elastic jobs"). Every
// admitted link has a thread of its own (ServeMember): it reads the link's hello, which names a
// membership (epoch e, n members, the link's position p) and the steps its worker completed; it
// waits until all n hellos of that membership came; then it serves the link as the backups path
// does (ServeBackupWorker, with b' = min(backup_workers, n - 1)) with the membership's state. A
// membership's step is the steps the shard had applied when its first hello was accepted: from
// then on the current membership regroups (it applies no step), the new one starts from the state
// after that step, and every one of its hellos must name it and is answered with it, however far
// its members have stepped by the time that hello's answer goes. A malformed or contradictory hello
// closes its link only (RefuseLink): that worker is no member. A newer membership's hellos replace
// one still forming; the first whole one becomes current. A link of
// the current membership that breaks (or breaks the protocol) makes the membership regroup: its
// other members get a regroup reply to every request, the shard keeps the state after the last step
// it applied (g), and a partly collected step is dropped (no member has its reply). With backup
// workers a member that lags (its push of an earlier step still to come) is still answered as late,
// so every survivor stands at g with the same masks when it regroups. On several shards (no backup
// workers) a member lost between its pushes to two shards can leave one shard a step ahead: every
// survivor stands at the step before it, and their membership's first hello undoes that step
// (undo_, kept by ApplyBackupStep until a push of the next step proves it applied everywhere).
#include <algorithm>
#include <memory>
#include <string>

#include "core/dist/parameter_shard.h"
#include "core/dist/parameter_shard_backups.h"

namespace dtrain::dist {

struct ParameterShard::Membership {
  Membership(std::uint32_t e, std::size_t n, std::uint64_t g)
      : epoch(e), members(n), step(g), came(n, false) {}

  const std::uint32_t epoch;
  const std::size_t members;
  // The steps the shard had applied when its first hello was accepted (none applied since): what
  // each of its hellos must name and is answered with, and the state it starts from.
  const std::uint64_t step;
  std::vector<bool> came;  // per position: its hello came
  std::size_t count = 0;
  Clock::time_point since = Clock::now();  // its first hello
  bool superseded = false;                 // a newer epoch's hello came before it was whole
  std::unique_ptr<Backups> backups;        // once whole: its state
  // Once whole, until every member's hello took it: the state after `step`.
  std::shared_ptr<const std::vector<float>> start;
  std::size_t answered = 0;  // members whose hello took `start`
};

namespace {

constexpr std::size_t kMostMembers = 64;  // as backup workers' masks

std::string Describe(std::uint32_t epoch, std::size_t members) {
  return "membership " + std::to_string(epoch) + " of " + std::to_string(members);
}

}  // namespace

Status ParameterShard::Admit(Link* link) {
  if (!invalid_.ok()) return invalid_;
  std::lock_guard lock(mu_);
  if (!options_.elastic || !admitting_ || failed_ || link == nullptr) {
    return Status::Error(name_ + ": not admitting workers now");
  }
  links_.push_back(link);
  threads_.emplace_back([this, link] {
    if (Status s = ServeMember(*link); !s.ok()) FailServe(s);
  });
  return Status::Ok();
}

Status ParameterShard::ServeElastic(std::span<Link* const> links) {
  for (Link* link : links) {
    if (Status s = Admit(link); !s.ok()) return s;
  }
  const Clock::time_point start = Clock::now();
  std::unique_lock lock(mu_);
  clocks_.SetGlobal(optimizer_->steps());
  // Until the current membership said goodbye, or the first failure; a whole membership is due
  // within the timeout of the start, of its first hello, or of the current one's loss.
  for (;;) {
    if (failed_) break;
    const Backups* b = current_ ? current_->backups.get() : nullptr;
    if (b != nullptr && !forming_ && !b->regroup && b->departures == b->workers) break;
    std::optional<Clock::time_point> since;
    std::string waiting;
    if (forming_) {
      since = forming_->since;
      waiting = Describe(forming_->epoch, forming_->members) + ": " +
                std::to_string(forming_->count) + " of its members said hello";
    } else if (b == nullptr) {
      since = start;
      waiting = "no membership said hello";
    } else if (b->regroup) {
      since = b->lost_at;
      waiting = Describe(current_->epoch, current_->members) +
                " lost a member and no newer membership said hello";
    }
    if (!since) {
      changed_.wait(lock);
      continue;
    }
    const Clock::time_point due = *since + options_.timeout;
    if (Clock::now() < due) {
      changed_.wait_until(lock, due);
      continue;
    }
    lock.unlock();
    FailServe(Status::Error(name_ + ": " + waiting + " within " +
                            std::to_string(options_.timeout.count()) + " ms"));
    lock.lock();
  }
  admitting_ = false;
  std::vector<std::jthread> threads;
  threads.swap(threads_);
  lock.unlock();
  threads.clear();  // joins them: their links closed, or their members said goodbye
  lock.lock();
  links_.clear();
  current_.reset();
  forming_.reset();
  return failed_ ? failure_ : Status::Ok();
}

Status ParameterShard::ServeMember(Link& link) {
  Result<std::pair<std::uint32_t, PsHeader>> request =
      ReceiveRequest(link, -1, "a new worker link: waiting for its hello");
  if (!request.ok()) return Status::Ok();  // it left before its hello: no member yet
  const auto [tag, h] = request.value();
  const int rank = static_cast<int>(h.position);
  // A bad or contradictory hello closes this link only: its worker is no member, and a membership
  // that waits for it still has its deadline.
  if (static_cast<PsMessage>(tag & 0x7F) != PsMessage::kHello) {
    RefuseLink(link, "a new worker link sent " + PsTagName(tag) + " before its hello");
    return Status::Ok();
  }
  if (h.from != h.position || h.members == 0 || h.position >= h.members ||
      h.members > kMostMembers) {
    RefuseLink(link, Worker(static_cast<int>(h.from)) + " said hello at position " +
                         std::to_string(h.position) + " of " + Describe(h.membership, h.members) +
                         " (at most " + std::to_string(kMostMembers) +
                         " members, each at its rank)");
    return Status::Ok();
  }
  if ((h.flags & (kPsBf16Pushes | kPsSparsePushes)) != 0) {
    RefuseLink(
        link, Worker(rank) + " announced compressed pushes, which elastic memberships do not take");
    return Status::Ok();
  }
  // The reply's membership fields, and the membership's backup workers: b' = min(b, n - 1), so a
  // lone member still trains.
  PsHeader own = h;
  own.max_staleness = std::min(static_cast<std::uint32_t>(options_.backup_workers), h.members - 1);
  const auto p = static_cast<std::size_t>(h.position);
  std::shared_ptr<Membership> m;
  std::shared_ptr<const std::vector<float>> state;
  {
    std::unique_lock lock(mu_);
    if (failed_) return Status::Ok();
    const bool older = (current_ && h.membership < current_->epoch) ||
                       (forming_ && h.membership < forming_->epoch);
    std::string contradicts;
    const std::string at = Worker(rank) + " said hello at position " + std::to_string(p) + " of " +
                           Describe(h.membership, h.members) + ", where ";
    if (!older && forming_ && h.membership == forming_->epoch &&
        (h.members != forming_->members || forming_->came[p])) {
      contradicts = at + Describe(forming_->epoch, forming_->members) +
                    (forming_->came[p] ? " already has that position" : " forms");
    } else if (!older && !forming_ && current_ && h.membership == current_->epoch) {
      contradicts = at + Describe(current_->epoch, current_->members) + " is whole already";
    }
    if (!contradicts.empty()) {
      lock.unlock();
      RefuseLink(link, contradicts);
      return Status::Ok();
    }
    if (older) {
      // Refused: the reply names the newest epoch, so the worker fails saying both.
      PsHeader newest = own;
      newest.membership = forming_ ? forming_->epoch : current_->epoch;
      PsHeader asked = h;
      asked.flags &= ~kPsWantParams;
      lock.unlock();
      PushDecoder unused;
      const Status answered = AnswerHello(link, rank, asked, unused, {}, 0, 0, 0, &newest);
      if (options_.log) options_.log(answered.message());
      return Status::Ok();
    }
    // Anything else it disagrees on (the layout, the workers, the backup workers, the step it
    // completed: a member behind or ahead of its membership's step would redo or skip steps):
    // refused before it takes a position. A newer membership's step is the steps applied now.
    const bool joins = forming_ && h.membership == forming_->epoch;
    std::uint64_t g = joins ? forming_->step : optimizer_->steps();
    // Several shards: a member lost between its pushes to two shards left this one a step ahead
    // of the survivors (and of the other shards), which no push of the next step proved applied
    // everywhere: the new membership undoes it.
    const bool undoes = !joins && undo_.valid && h.clock + 1 == g;
    if (undoes) g = h.clock;
    {
      PsHeader asked = h;
      asked.flags &= ~kPsWantParams;
      if (const std::string differs = HelloMismatch(asked, OwnHello(asked, g, 0, 0, &own));
          !differs.empty()) {
        lock.unlock();
        PushDecoder unused;
        (void)AnswerHello(link, rank, asked, unused, {}, g, 0, 0, &own);
        RefuseLink(link, Worker(rank) + " said hello with " + differs);
        return Status::Ok();
      }
    }
    if (!joins) {
      if (forming_) forming_->superseded = true;
      // The current membership applies no step from now on: the new one starts at g.
      if (current_ && !current_->backups->regroup) {
        current_->backups->regroup = true;
        current_->backups->lost_at = Clock::now();
      }
      if (undoes) {
        Undo();
        if (options_.log) {
          options_.log(name_ + ": undid its last step, back to step " + std::to_string(g) +
                       " (a lost member had pushed that step to this shard only): membership " +
                       std::to_string(h.membership) + " starts there");
        }
      }
      undo_.valid = false;  // the steps before g are every member's now
      forming_ = std::make_shared<Membership>(h.membership, h.members, g);
    }
    m = forming_;
    m->came[p] = true;
    if (++m->count == m->members) {
      // Whole: it goes on from the state after its step, with n members.
      m->backups = std::make_unique<Backups>(m->members, static_cast<int>(own.max_staleness),
                                             params_.size(), m->step, params_);
      m->start = m->backups->state;
      current_ = m;
      forming_.reset();
      clocks_.SetGlobal(m->step);
    }
    changed_.notify_all();
    changed_.wait(lock, [&] { return failed_ || m->backups || m->superseded; });
    if (failed_) return Status::Ok();
    if (!m->backups) {  // superseded: the worker regroups again
      lock.unlock();
      (void)AnswerRegroup(link, rank, PsMessage::kHello, 0);
      return Status::Ok();
    }
    // The others may have stepped already (with backup workers, without this member): it is
    // answered at the membership's step all the same, and its first push is answered as late.
    state = m->start;
    if (++m->answered == m->members) m->start.reset();
  }
  Backups& b = *m->backups;
  PushDecoder decoder;
  if (AnswerHello(link, rank, h, decoder, *state, m->step, m->step, 0, &own).ok() &&
      ServeBackupWorker(b, link, rank, /*greeted=*/true).ok()) {
    return Status::Ok();
  }
  std::lock_guard lock(mu_);
  if (!failed_) LoseMember(b, link);
  return Status::Ok();
}

void ParameterShard::RefuseLink(Link& link, const std::string& why) {
  if (options_.log) options_.log(name_ + ": closed a worker link: " + why);
  link.Close();
}

void ParameterShard::LoseMember(Backups& b, Link& link) {
  if (!b.regroup) {
    b.regroup = true;
    b.lost_at = Clock::now();
  }
  changed_.notify_all();
  link.Close();
}

void ParameterShard::KeepUndo() {
  undo_.params.assign(params_.begin(), params_.end());
  const std::vector<std::span<float>> state = optimizer_->StateVectors();
  undo_.state.resize(state.size());
  for (std::size_t i = 0; i < state.size(); ++i)
    undo_.state[i].assign(state[i].begin(), state[i].end());
  undo_.steps = optimizer_->steps();
  undo_.valid = true;
}

void ParameterShard::Undo() {
  std::ranges::copy(undo_.params, params_.begin());
  const std::vector<std::span<float>> state = optimizer_->StateVectors();
  for (std::size_t i = 0; i < state.size(); ++i)
    std::ranges::copy(undo_.state[i], state[i].begin());
  optimizer_->set_steps(undo_.steps);
  stats_.steps = undo_.steps;
  ++stats_.steps_undone;
}

Status ParameterShard::AnswerRegroup(Link& link, int rank, PsMessage kind, std::uint64_t clock) {
  PsHeader reply;
  reply.from = static_cast<std::uint32_t>(options_.shard);
  reply.clock = clock;
  reply.flags = kPsRegroup;
  return SendReply(link, rank, kind, reply, {}, "regroup");
}

}  // namespace dtrain::dist
