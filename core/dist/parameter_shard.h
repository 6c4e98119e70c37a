// ParameterShard: one parameter-server shard (runs in a server process). It owns the range
// [begin, end) of the flat parameter vector and an optimizer over that range (so the optimizer's
// state vectors and step count are the shard's), and serves N workers, one Link each, in the
// parameter-server protocol of core/dist/ps_protocol.md, whose message codec (PsHeader and the
// tags, shared with the worker side) is ps_messages.h.
//
//   ParameterShard shard({.shard = 1, .shards = 2, .begin = r[1].begin, .end = r[1].end,
//                         .num_params = n, .workers = 4, .mode = PsMode::kSync, ...});
//   shard.Load(initial.subspan(r[1].begin, r[1].size()));   // then Serve(links), links[r]: rank r
//
// Initial values come from Load before Serve (the server process builds them from the job's seed
// or a checkpoint); a worker that says hello asking for parameters receives them, so workers start
// from the shard's values (ps_protocol.md). Without Load the range starts at zero.
//
// Sync mode (mode = "sync", allreduce = "ps"): step t is applied once every worker has pushed
// step t. The shard reads the links in rank order 0..N-1, so the gradients are summed in that
// order: g = sum_r (rows_r / total_rows) * g_r, the mean over the whole step's batch, bitwise the
// same every run; then optimizer.Step(g, lr) with the lr of the pushes (all equal), and every
// worker receives the new range and the agreed stop vote (the most urgent one proposed). A snapshot
// or fetch a worker sends between receiving step t's reply and pushing step t+1 is answered with
// the state after step t on every shard: a consistent cut, used for checkpoints.
//
// Async mode (Downpour, Dean et al. 2012; Adagrad is the usual optimizer): each push is applied on
// arrival with the lr it carries; a fetch is answered with the current range. Each worker's link
// is served by a thread of its own, and the optimizer step, the clocks and the copy of the range
// into a fetch reply happen under one mutex. Why threads rather than a poll loop over
// Link::Readable: a Link has no blocking wait on several links at once, so a poll loop would have
// to spin or sleep (burning a core, or adding latency, on 2-core hosts), while a thread blocked in
// Recv costs nothing and wakes at once; and a fetch that the staleness bound delays simply waits
// on a condition variable in its own thread without holding up the other workers. N is small
// (workers of one job), so N threads are cheap.
//
// Clocks and staleness (async): worker w's clock c_w is the number of its pushes the shard has
// applied; the global clock g is the minimum of c_w over the workers still training (a worker
// that said goodbye no longer counts; g never decreases). Fetch replies carry g. A push is
// computed by a worker at clock c (it had made c pushes before it) from parameters whose fetch
// reply said g_f; its staleness is c - g_f >= 0 (0: every worker had pushed as often as this one,
// as in synchronous SGD). With max_staleness s > 0 (stale synchronous parallel, Ho et al. 2013)
// a worker at clock c computes only with parameters of g_f >= c - s: it fetches with that minimum
// when its cached parameters are older, and the shard delays the reply until g >= c - s; a push
// with staleness above s is refused as a protocol error. So the recorded staleness never exceeds
// s. With s = 0 there is no bound. Stats() reports the staleness of every applied push.
//
// Compressed pushes (ps_protocol.md): a worker's hello may announce bf16 or top-k pushes; the
// shard decodes each such push into the slice its raw push would have been and goes on as above.
// In sync mode it also carries their checkpoints' residuals: it ORs the pushes' checkpoint
// proposals into every push reply, and on rank 0's residual request collects every worker's
// slice and hands them all to rank 0 (CollectResiduals, in parameter_shard_residuals.cc; at most
// N x range floats, held during that exchange only; ps_protocol.md "Residuals").
//
// Backup workers (sync, options.backup_workers = b > 0; ps_protocol.md "Backup workers",
// parameter_shard_backups.cc): every worker's link is served by a thread of its own, as in async
// mode, and step t is applied once N - b of its pushes have come (all N when a push of it asks
// for every gradient: a checkpoint proposal, a stop vote, kPsTakeAll), summed in rank order, each
// weighted by its share of the taken pushes' rows. A push that comes after its step was applied
// is dropped and answered at once with the state the others reached and which ranks each of the
// steps it missed took. After a step that published a checkpoint or a stop, no step is applied
// before rank 0's next request, so its snapshot is of exactly that step. Each mask is a u64, so
// at most 64 workers.
//
// Elastic jobs (options.elastic; sync; ps_protocol.md "Elastic jobs",
// parameter_shard_members.cc): the workers come and go in memberships (epoch e, n members, each
// link at its member's position). Links come through Admit (and Serve's); each link's hello says
// its membership; once all n hellos of the newest epoch came, the shard serves them as the backups
// path does with b' = min(backup_workers, n - 1), from its state (clock g, the steps applied).
// A membership's step is g when its first hello was accepted (the current membership applies no
// step from then on): each of its hellos must name it and is answered with it, even one answered
// after the others took steps without it.
// When a link of the current membership breaks, the shard keeps that state (a partly collected
// step is dropped) and answers every other request of the membership with a regroup reply — but a
// late push, which it still answers as late, so that every survivor stands at g — until a newer
// membership has said hello; a whole membership that does not come within options.timeout (of the
// start, of the loss, or of its first hello) fails the shard. A malformed or contradictory hello
// closes that link only (options.log says why): its worker is no member.
// On several shards (no backup workers then) a member lost between its pushes to two shards may
// leave this shard one step ahead of the others: it keeps the state from before its last step
// until a push of the next one comes, and a newer membership's first hello one step behind it
// undoes that step (counted in ShardStats::steps_undone and told to options.log), so every shard
// starts the membership at the same step.
//
// Deadlines and failures: every wait for a worker (its next message, its push of step t, a
// delayed fetch) has the deadline options.timeout from when the wait began; a silent, dead or
// misbehaving worker is an error naming the shard, "worker rank R" and the step or clock. On the
// first failure Serve closes every link (so the other workers fail promptly, naming this shard
// rather than waiting for their deadlines) and returns that failure.
//
// Rejoining (async with options.rejoin): a worker whose link breaks — not one that breaks the
// protocol — is absent instead: the others go on (an absent worker does not hold back g), the
// push it was sending is dropped, and a new link for the same rank (a restarted process) may
// take its place through Rejoin within options.timeout. Its clock is then max(c_w, g), which the
// hello reply tells it (basis slot); its first push may carry a larger clock (the largest any
// shard told it), which the shard adopts, so every shard counts the same pushes from then on.
// A worker absent for longer than options.timeout fails the shard.
//
// Thread safety: Load, Serve and the accessors params()/optimizer() one thread at a time, never
// concurrently with Serve; Stats() and name() are safe from any thread at any time (a server
// process reports metrics while Serve runs).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/dist/link.h"
#include "core/dist/ps_messages.h"
#include "core/dist/push_codec.h"
#include "core/dist/residual_deposits.h"
#include "core/dist/staleness.h"
#include "core/dist/worker_clocks.h"
#include "core/math/buffer.h"
#include "core/optim/optimizer.h"
#include "core/status.h"

namespace dtrain::dist {

// ---- The shard ------------------------------------------------------------------------------

struct ShardOptions {
  int shard = 0;  // this shard's index, in [0, shards)
  int shards = 1;
  std::size_t begin = 0;  // the range served: ShardRanges(num_params, shards)[shard]
  std::size_t end = 0;
  std::size_t num_params = 0;  // n, the whole flat vector's length
  int workers = 1;             // N
  PsMode mode = PsMode::kSync;
  int max_staleness = 0;  // async: s; 0 = unbounded
  optim::OptimizerOptions optimizer;
  std::chrono::milliseconds timeout{30'000};  // every wait for a worker
  // Async: a worker whose link breaks (it died, or its host went away) leaves without failing the
  // shard, and may come back within `timeout` through Rejoin (a restarted worker process).
  bool rejoin = false;
  // Sync: b, the slowest workers a step may go on without (0 <= b < workers, at most 64
  // workers); with b > 0, one shard and raw pushes only.
  int backup_workers = 0;
  // Sync: the workers come in memberships (see above); `workers` is the job's (the
  // hello's check), a membership may have any size up to 64. With backup_workers = b, a
  // membership of n members goes on without min(b, n - 1) of them.
  bool elastic = false;
  // Elastic: told, one line each, why a link was refused and closed (a malformed or contradictory
  // hello), the shard going on serving the others; and each step undone (several shards). May be
  // empty.
  std::function<void(const std::string&)> log = {};
};

// What a shard has applied; cumulative since construction.
struct ShardStats {
  std::uint64_t steps = 0;           // optimizer steps standing (sync: steps; async: pushes)
  std::uint64_t pushes_applied = 0;  // worker pushes applied (sync: N per step)
  std::uint64_t pushes_dropped = 0;  // backup workers: pushes that came after their step
  // Backup workers, elastic: pushes taken into the step being collected (applied or not yet).
  std::uint64_t pushes_received = 0;
  std::uint64_t steps_undone = 0;    // elastic on several shards: steps a new membership undid
  std::uint64_t global_clock = 0;    // g (sync: steps applied)
  StalenessStats staleness;          // of every applied push (sync: all 0)
};

class ParameterShard {
 public:
  // Invalid options (a range that is not ShardRanges(num_params, shards)[shard], no workers,
  // invalid optimizer options...) make Load and Serve fail, saying why.
  explicit ParameterShard(ShardOptions options);
  ~ParameterShard();
  ParameterShard(const ParameterShard&) = delete;
  ParameterShard& operator=(const ParameterShard&) = delete;

  // Sets the range's values, and optionally the optimizer's state vectors (all of them, in
  // Optimizer::StateVectors order, end - begin floats each) and step count. Before Serve.
  Status Load(std::span<const float> params,
              std::span<const std::span<const float>> optimizer_state = {},
              std::uint64_t steps = 0);
  // Async, before Serve: each worker's clock to start from (a checkpoint's version vector for
  // this shard, options.workers of them); g starts at their minimum. Without it clocks start at 0.
  Status LoadClocks(std::span<const std::uint64_t> clocks);

  // Serves until every worker has said goodbye (OK) or the first failure (then every link is
  // closed). links[r] is connected to worker rank r; links.size() must be options.workers. The
  // links must outlive the call; nobody else may use them meanwhile.
  Status Serve(std::span<Link* const> links);
  // Async with options.rejoin, while Serve runs (from any thread): serves worker `rank` over
  // `link` in place of its broken one. An error (and `link` unused) when that worker is not
  // absent or the shard is not serving. `link` must outlive Serve.
  Status Rejoin(int rank, Link* link);
  // Elastic, before or while Serve runs (from any thread): serves a new link, whose hello says
  // its membership and position. An error (and `link` unused) once Serve has returned. `link`
  // must outlive Serve.
  Status Admit(Link* link);

  ShardStats Stats() const;
  // "shard 1 of 3 [100, 200)"
  const std::string& name() const { return name_; }
  const ShardOptions& options() const { return options_; }
  // The range's values and the optimizer (state vectors, steps), e.g. after Serve.
  std::span<const float> params() const { return params_; }
  optim::Optimizer& optimizer() { return *optimizer_; }

 private:
  struct Backups;     // ServeBackups' state (parameter_shard_backups.cc); elastic: a membership's
  struct Membership;  // an elastic job's membership, forming or formed (parameter_shard_members.cc)

  Status ServeSync(std::span<Link* const> links);
  Status ServeAsync(std::span<Link* const> links);
  // Sync with backup workers: one thread per link (ServeBackupWorker, worker `rank`'s) until
  // every worker said goodbye or the first failure.
  Status ServeBackups(std::span<Link* const> links);
  // `greeted`: an elastic member, whose hello ServeMember answered.
  Status ServeBackupWorker(Backups& backups, Link& link, int rank, bool greeted = false);
  // Elastic: serves until the current membership said goodbye or the first failure.
  Status ServeElastic(std::span<Link* const> links);
  // Elastic: one admitted link, from its hello on (its own thread).
  Status ServeMember(Link& link);
  // Elastic, mu_ held: the member over `link` of `backups` is gone; its membership regroups.
  void LoseMember(Backups& backups, Link& link);
  // Elastic: logs `why` (options.log) and closes `link`, whose hello made it no member.
  void RefuseLink(Link& link, const std::string& why);
  // Elastic: the reply to a request of a membership that regroups.
  Status AnswerRegroup(Link& link, int rank, PsMessage kind, std::uint64_t clock);
  // Elastic on several shards, mu_ held: keeps the state from before the step about to be applied
  // (undo_); and puts it back, the step undone.
  void KeepUndo();
  void Undo();
  // A push `push` from worker `rank` (its data received), `lock` holding mu_: held until its
  // step is applied, then answered; or, late, dropped and answered at once (AnswerLatePush).
  Status ServeBackupPush(Backups& backups, Link& link, int rank, const PsHeader& push,
                         std::unique_lock<std::mutex>& lock);
  Status AnswerLatePush(Backups& backups, Link& link, int rank, const PsHeader& push,
                        std::unique_lock<std::mutex>& lock);
  // mu_ held: applies the step being collected if it may be (enough pushes, no hold); an error
  // when a worker waits on it but it never could be (too many workers said goodbye).
  Status TryApplyBackupStep(Backups& backups);
  // mu_ held: applies it with the `held` pushes that came, prepares their replies, publishes.
  void ApplyBackupStep(Backups& backups, std::size_t held);
  // mu_ held: what the step being collected waits for, for a deadline's error.
  std::string BackupWait(const Backups& backups) const;
  // The whole conversation with one worker in async mode (its own thread).
  Status ServeAsyncWorker(Link& link, int rank);

  // Receives the next request header from worker `rank` (-1: any, an elastic link before its
  // hello); `link_broke`, if given, is set when the
  // link failed (rather than the worker breaking the protocol).
  Result<std::pair<std::uint32_t, PsHeader>> ReceiveRequest(Link& link, int rank,
                                                            const std::string& waiting_for,
                                                            bool* link_broke = nullptr);
  // Checks a hello against this shard's options and answers it (with the range if asked),
  // taking the encoding of the worker's compressed pushes into `pushes` (push_codec.h).
  // `params`, `clock` and `steps` are what to send (in async mode taken under the lock).
  // `own_clock`: async, the worker's clock (its pushes applied), sent in the basis slot.
  // `membership`: elastic, the reply's membership fields (epoch, position, members) and its
  // backup workers (slot 22).
  Status AnswerHello(Link& link, int rank, const PsHeader& hello, PushDecoder& pushes,
                     std::span<const float> params, std::uint64_t clock, std::uint64_t steps,
                     std::uint64_t own_clock = 0, const PsHeader* membership = nullptr);
  // The hello reply's header: this shard's view (AnswerHello's arguments) of what `hello` asks.
  PsHeader OwnHello(const PsHeader& hello, std::uint64_t clock, std::uint64_t steps,
                    std::uint64_t own_clock, const PsHeader* membership) const;
  // What `hello` and this shard's `reply` to it disagree on ("workers 3 where the shard has 2"),
  // or empty.
  std::string HelloMismatch(const PsHeader& hello, const PsHeader& reply) const;
  // A reply header and its data messages; `context` (e.g. "step 3") prefixes an error.
  Status SendReply(Link& link, int rank, PsMessage kind, const PsHeader& header,
                   std::span<const std::span<const float>> data, const std::string& context = "");
  // Snapshot: the range, the state vectors, the steps, g and the version vector (one clock per
  // worker: its size is the reply's workers).
  Status AnswerSnapshot(Link& link, int rank, std::span<const float> params,
                        std::span<const std::span<const float>> state, std::uint64_t steps,
                        std::uint64_t clock, std::span<const std::uint64_t> clocks);
  // Sync, on rank 0's residual request `first` (its data not yet read): reads every worker's
  // residual slice for the checkpoint before step first.clock (`next_step`, when known, must be
  // it), rank 0's and then the others' from their links (answering the hello of a worker that
  // has not said it yet: `greeted`, ServeSync's), and answers rank 0 with all of them and the
  // others with an acknowledgement.
  Status CollectResiduals(std::span<Link* const> links,
                          std::vector<std::optional<PushDecoder>>& greeted, const PsHeader& first,
                          std::optional<std::uint64_t> next_step, std::span<float> scratch,
                          ResidualDeposits& deposits);
  // The error for a request that this state does not expect.
  Status Unexpected(int rank, std::uint32_t tag, const std::string& context) const;
  std::string Worker(int rank) const { return "worker rank " + std::to_string(rank); }
  Status Fail(const std::string& context, const Status& status) const;

  // Async helpers; call with mu_ held.
  // Records the first failure of ServeAsync (ServeBackups, ServeElastic) and closes every link.
  void FailServe(const Status& status);
  // Worker `rank`'s link broke (`why`): with options_.rejoin it is absent from now and OK is
  // returned; without, `why` is.
  Status LinkBroke(int rank, Link& link, Status why);
  // Starts the thread serving worker `rank` over `link`; call with mu_ held.
  void StartWorkerThread(int rank, Link* link);

  const ShardOptions options_;
  const std::string name_;
  Status invalid_;  // why the options are unusable; OK if they are fine
  std::unique_ptr<optim::Optimizer> optimizer_;
  math::FloatBuffer params_;

  // Clocks, stats and the async failure: guarded by mu_ (written under it in both modes).
  mutable std::mutex mu_;
  std::condition_variable changed_;  // a clock, a departure or the failure changed
  WorkerClocks clocks_;  // async: pushes applied, goodbyes, absences, g; sync: g = steps
  std::vector<std::uint64_t> loaded_clocks_;  // what LoadClocks gave: where ServeAsync starts
  std::vector<Clock::time_point> absent_since_;
  std::vector<bool> may_jump_;  // per worker: its next push may carry a larger clock
  bool serving_ = false;        // ServeAsync runs: Rejoin is allowed
  // ServeAsync's (ServeBackups', ServeElastic's), one per worker link served.
  std::vector<std::jthread> threads_;
  ShardStats stats_;
  bool failed_ = false;
  Status failure_;
  // During ServeAsync (ServeBackups, ServeElastic: every link admitted), to close on failure.
  std::vector<Link*> links_;
  // Elastic (mu_): the membership served and the one whose hellos are coming, if any.
  std::shared_ptr<Membership> current_, forming_;
  bool admitting_ = true;  // Admit takes links (until ServeElastic returns)
  // Elastic on several shards (mu_): the range, the optimizer's state vectors and its steps from
  // before the last step applied, while no push of the step after it has come (that push proves
  // every shard applied it); `valid` false otherwise, and once a membership formed after it.
  struct {
    math::FloatBuffer params;
    std::vector<math::FloatBuffer> state;
    std::uint64_t steps = 0;
    bool valid = false;
  } undo_;
};

}  // namespace dtrain::dist
