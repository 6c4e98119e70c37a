#include "core/dist/shm_link.h"

#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstring>
#include <ctime>
#include <new>
#include <nlohmann/json.hpp>
#include <utility>

#include "core/codec/bytes.h"
#include "core/dist/same_host.h"
#include "core/dist/shm_segment.h"
#include "core/dist/tcp_link.h"
#include "core/duration_text.h"

namespace dtrain::dist {
namespace internal {

// One direction's ring: positions are byte counts since the start (index = position mod
// capacity). Each group on its own cache line, so the two ends do not share lines needlessly.
struct ShmRing {
  alignas(64) std::atomic<std::uint64_t> head;  // bytes published by the producer
  alignas(64) std::atomic<std::uint64_t> tail;  // bytes consumed by the consumer
  alignas(64) std::atomic<std::uint32_t> data_seq;  // futex word the consumer sleeps on
  std::atomic<std::uint32_t> consumer_sleeping;      // 1 while it may sleep
  alignas(64) std::atomic<std::uint32_t> space_seq;  // futex word the producer sleeps on
  std::atomic<std::uint32_t> producer_sleeping;
};

// The segment's first 4 KiB; the rings' bytes follow (protocol.md, "Shared-memory links").
struct ShmSegment {
  std::uint32_t magic;
  std::uint32_t version;
  std::uint64_t ring_bytes;
  alignas(64) std::atomic<std::uint32_t> closed[2];  // by role: creator, opener
  ShmRing rings[2];                                   // [0]: creator -> opener
};

}  // namespace internal

namespace {

using internal::ShmRing;
using internal::ShmSegment;
using Json = nlohmann::json;

constexpr std::uint32_t kSegmentMagic = 0x4D485344;  // "DSHM"
constexpr std::uint32_t kSegmentVersion = 1;
constexpr std::size_t kSegmentHeader = 4096;
constexpr std::uint32_t kMessageMarker = 0x4753534D;  // "MSSG"
constexpr std::size_t kMessageHeader = 16;
constexpr std::size_t kMaxPiece = std::size_t{256} << 10;
constexpr std::size_t kMinRing = std::size_t{4} << 10;
constexpr std::size_t kMaxRing = std::size_t{1} << 30;

static_assert(std::atomic<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);
static_assert(sizeof(std::atomic<std::uint32_t>) == 4, "futex words are 32-bit");
static_assert(sizeof(ShmSegment) <= kSegmentHeader);
static_assert(offsetof(ShmSegment, closed) == 64 && offsetof(ShmSegment, rings) == 128);
static_assert(sizeof(ShmRing) == 256);
static_assert(offsetof(ShmRing, tail) == 64 && offsetof(ShmRing, data_seq) == 128 &&
              offsetof(ShmRing, consumer_sleeping) == 132 && offsetof(ShmRing, space_seq) == 192 &&
              offsetof(ShmRing, producer_sleeping) == 196);


std::uint32_t* Word(std::atomic<std::uint32_t>& w) {
  return reinterpret_cast<std::uint32_t*>(&w);
}

// Sleeps while `w` holds `expected`, for at most `d` (shared, not process-private: the other
// end is another process).
void FutexWait(std::atomic<std::uint32_t>& w, std::uint32_t expected, Clock::duration d) {
  const auto ns = std::max<std::int64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(), 0);
  timespec ts{.tv_sec = static_cast<time_t>(ns / 1'000'000'000),
              .tv_nsec = static_cast<long>(ns % 1'000'000'000)};
  ::syscall(SYS_futex, Word(w), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void FutexWake(std::atomic<std::uint32_t>& w) {
  ::syscall(SYS_futex, Word(w), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

void WakeAll(std::atomic<std::uint32_t>& seq) {
  seq.fetch_add(1, std::memory_order_seq_cst);
  FutexWake(seq);
}

std::size_t SegmentBytes(std::size_t ring_bytes) { return kSegmentHeader + 2 * ring_bytes; }

bool ValidRingBytes(std::uint64_t n) {
  return n >= kMinRing && n <= kMaxRing && (n & (n - 1)) == 0;
}

// Copies `n` bytes into/out of a ring of `capacity` bytes at position `pos`, wrapping.
void CopyIn(std::uint8_t* ring, std::size_t capacity, std::uint64_t pos, const std::uint8_t* src,
            std::size_t n) {
  const std::size_t at = static_cast<std::size_t>(pos & (capacity - 1));
  const std::size_t first = std::min(n, capacity - at);
  std::memcpy(ring + at, src, first);
  if (first < n) std::memcpy(ring, src + first, n - first);
}

void CopyOut(const std::uint8_t* ring, std::size_t capacity, std::uint64_t pos, std::uint8_t* dst,
             std::size_t n) {
  const std::size_t at = static_cast<std::size_t>(pos & (capacity - 1));
  const std::size_t first = std::min(n, capacity - at);
  std::memcpy(dst, ring + at, first);
  if (first < n) std::memcpy(dst + first, ring, n - first);
}

// Creates, sizes, maps and initialises a new segment under an unguessable name.
Result<ShmMapping> CreateSegment(const std::string& name, std::size_t ring_bytes) {
  Result<ShmMapping> m = CreateShmSegment(name, SegmentBytes(ring_bytes));
  if (!m.ok()) return m;
  auto* s = new (m.value().data()) ShmSegment{};
  s->magic = kSegmentMagic;
  s->version = kSegmentVersion;
  s->ring_bytes = ring_bytes;
  return m;
}

// Opens the peer's segment, unlinks its name, and checks that it is what the offer said.
Result<ShmMapping> OpenSegment(const std::string& name, std::uint64_t ring_bytes) {
  if (!ValidRingBytes(ring_bytes)) {
    return Status::Error("a ring of " + std::to_string(ring_bytes) + " bytes is not allowed");
  }
  Result<ShmMapping> m = OpenShmSegment(name, SegmentBytes(ring_bytes), /*unlink=*/true);
  if (!m.ok()) return m;
  const auto* s = static_cast<const ShmSegment*>(m.value().data());
  if (s->magic != kSegmentMagic || s->version != kSegmentVersion || s->ring_bytes != ring_bytes) {
    return Status::Error("segment " + name + " has another layout or version");
  }
  return m;
}

// j[key], or null when j is not an object or has no such key.
const Json* Field(const Json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

Status SendControl(net::FrameStream& stream, const Json& message, Deadline deadline) {
  return stream.WriteString(net::MessageType::kControl, 0, 0, message.dump(),
                            Remaining(deadline));
}

// The next frame, which must be a control message {"v": 1, "op": op, ...} from `peer_rank`.
Result<Json> ReadControl(net::FrameStream& stream, const std::string& op, int peer_rank,
                         Deadline deadline) {
  Result<net::Frame> frame = stream.Read(Remaining(deadline));
  if (!frame.ok()) return frame.status();
  const net::FrameHeader& h = frame.value().header;
  if (h.type != net::MessageType::kControl ||
      h.sender != static_cast<std::uint32_t>(peer_rank)) {
    return Status::Error("unexpected frame: expected a control frame from rank " +
                         std::to_string(peer_rank) + ", got a " +
                         std::string(net::MessageTypeName(h.type)) + " frame from sender " +
                         std::to_string(h.sender));
  }
  Json j = Json::parse(frame.value().payload, nullptr, /*allow_exceptions=*/false);
  const Json* v = Field(j, "v");
  const Json* got = Field(j, "op");
  if (v == nullptr || *v != 1 || got == nullptr || *got != op) {
    return Status::Error("unexpected frame: expected a \"" + op + "\" message, got " +
                         frame.value().payload.substr(0, 200));
  }
  return j;
}

// The segment's set-up over the connection. A declined set-up (`*declined`) leaves the connection
// clean for a TcpLink; any other failure leaves it unusable.
Result<ShmMapping> SetUpSegment(net::FrameStream& stream, ShmRole role, int peer_rank,
                             std::size_t ring_bytes, Deadline deadline, bool* declined) {
  *declined = false;
  if (role == ShmRole::kCreator) {
    Result<std::string> name = RandomSegmentName();
    Result<ShmMapping> mine = name.ok() ? CreateSegment(name.value(), ring_bytes)
                                        : Result<ShmMapping>(name.status());
    if (!mine.ok()) {
      if (Status s = SendControl(
              stream, {{"v", 1}, {"op", "shm"}, {"error", mine.status().message()}}, deadline);
          !s.ok()) {
        return s;
      }
      *declined = true;
      return Status::Error("cannot create a shared-memory segment: " + mine.status().message());
    }
    Status offered = SendControl(
        stream, {{"v", 1}, {"op", "shm"}, {"name", name.value()}, {"ring_bytes", ring_bytes}},
        deadline);
    Result<Json> ack = offered.ok() ? ReadControl(stream, "shm-ack", peer_rank, deadline)
                                    : Result<Json>(offered);
    UnlinkShmSegment(name.value());  // mapped here, and there if the peer opened it
    if (!ack.ok()) return ack.status();
    if (const Json* error = Field(ack.value(), "error")) {
      *declined = true;
      return Status::Error("the peer could not open the shared-memory segment: " +
                           error->dump());
    }
    return mine;
  }
  Result<Json> offer = ReadControl(stream, "shm", peer_rank, deadline);
  if (!offer.ok()) return offer.status();
  if (const Json* error = Field(offer.value(), "error")) {
    *declined = true;
    return Status::Error("the peer could not create a shared-memory segment: " + error->dump());
  }
  const Json* name = Field(offer.value(), "name");
  const Json* bytes = Field(offer.value(), "ring_bytes");
  Result<ShmMapping> theirs =
      name != nullptr && name->is_string() && bytes != nullptr && bytes->is_number_unsigned()
          ? OpenSegment(name->get<std::string>(), bytes->get<std::uint64_t>())
          : Result<ShmMapping>(Status::Error("a malformed offer: " + offer.value().dump()));
  if (!theirs.ok()) {
    if (Status s = SendControl(
            stream, {{"v", 1}, {"op", "shm-ack"}, {"error", theirs.status().message()}},
            deadline);
        !s.ok()) {
      return s;
    }
    *declined = true;
    return Status::Error("cannot open the peer's shared-memory segment: " +
                         theirs.status().message());
  }
  if (Status s = SendControl(stream, {{"v", 1}, {"op", "shm-ack"}}, deadline); !s.ok()) return s;
  return theirs;
}

std::string PeerName(const net::FrameStream& stream, int peer_rank, const std::string& label) {
  return (label.empty() ? "rank " + std::to_string(peer_rank) : label) + " (" + stream.peer() +
         ")";
}

}  // namespace

Result<std::unique_ptr<ShmLink>> ShmLink::Create(net::FrameStream stream, ShmRole role,
                                                 int self_rank, int peer_rank,
                                                 std::string peer_label, Deadline deadline,
                                                 const ShmOptions& options) {
  const std::string peer = PeerName(stream, peer_rank, peer_label);
  if (!ValidRingBytes(options.ring_bytes)) {
    return Status::Error("a shared-memory ring of " + std::to_string(options.ring_bytes) +
                         " bytes: not a power of two in [4 KiB, 1 GiB]");
  }
  stream.set_sender(static_cast<std::uint32_t>(self_rank));
  stream.set_peer_name(peer);
  bool declined = false;
  Result<ShmMapping> m =
      SetUpSegment(stream, role, peer_rank, options.ring_bytes, deadline, &declined);
  if (!m.ok()) {
    return Status::Error("setting up shared memory with " + peer + ": " + m.status().message());
  }
  const std::size_t bytes = m.value().size();
  void* map = m.value().Release();
  return std::unique_ptr<ShmLink>(
      new ShmLink(std::move(stream), map, bytes, role, peer, options));
}

ShmLink::ShmLink(net::FrameStream stream, void* map, std::size_t map_bytes, ShmRole role,
                 std::string peer, const ShmOptions& options)
    : stream_(std::move(stream)),
      socket_(stream_.fd()),
      map_(map),
      map_bytes_(map_bytes),
      segment_(static_cast<ShmSegment*>(map)),
      out_(&segment_->rings[role == ShmRole::kCreator ? 0 : 1]),
      in_(&segment_->rings[role == ShmRole::kCreator ? 1 : 0]),
      out_data_(static_cast<std::uint8_t*>(map) + kSegmentHeader +
                (role == ShmRole::kCreator ? 0 : options.ring_bytes)),
      in_data_(static_cast<std::uint8_t*>(map) + kSegmentHeader +
               (role == ShmRole::kCreator ? options.ring_bytes : 0)),
      capacity_(options.ring_bytes),
      piece_(std::min(kMaxPiece, options.ring_bytes / 4)),
      closed_here_(segment_->closed[role == ShmRole::kCreator ? 0 : 1]),
      closed_there_(segment_->closed[role == ShmRole::kCreator ? 1 : 0]),
      options_(options),
      peer_(std::move(peer)) {}

ShmLink::~ShmLink() {
  Close();
  ::munmap(map_, map_bytes_);
}

void ShmLink::Close() {
  closed_.store(true, std::memory_order_seq_cst);
  closed_here_.store(1, std::memory_order_seq_cst);
  for (ShmRing* r : {out_, in_}) {
    WakeAll(r->data_seq);
    WakeAll(r->space_seq);
  }
  ::shutdown(socket_, SHUT_RDWR);
}

bool ShmLink::PeerGone() const {
  pollfd p{.fd = socket_, .events = POLLRDHUP, .revents = 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

template <typename Ready>
ShmLink::WaitEnd ShmLink::Wait(const Ready& ready, std::atomic<std::uint32_t>& seq,
                               std::atomic<std::uint32_t>& sleeping, Deadline deadline) {
  if (ready()) return WaitEnd::kReady;
  const Clock::time_point poll_end = Clock::now() + options_.poll;
  for (;;) {
    if (closed_.load(std::memory_order_acquire)) return WaitEnd::kClosedHere;
    if (closed_there_.load(std::memory_order_acquire) != 0) {
      return ready() ? WaitEnd::kReady : WaitEnd::kPeerGone;
    }
    if (Clock::now() >= poll_end) break;
    ::sched_yield();
    if (ready()) return WaitEnd::kReady;
  }
  for (;;) {
    const std::uint32_t before = seq.load(std::memory_order_seq_cst);
    sleeping.store(1, std::memory_order_seq_cst);
    WaitEnd end = WaitEnd::kReady;
    const Clock::time_point now = Clock::now();
    if (ready()) {
      end = WaitEnd::kReady;
    } else if (closed_.load(std::memory_order_acquire)) {
      end = WaitEnd::kClosedHere;
    } else if (closed_there_.load(std::memory_order_acquire) != 0 || PeerGone()) {
      end = ready() ? WaitEnd::kReady : WaitEnd::kPeerGone;
    } else if (now >= deadline) {
      end = WaitEnd::kTimeout;
    } else {
      FutexWait(seq, before, std::min<Clock::duration>(deadline - now, options_.liveness_slice));
      sleeping.store(0, std::memory_order_relaxed);
      continue;
    }
    sleeping.store(0, std::memory_order_relaxed);
    return end;
  }
}

Status ShmLink::Send(std::uint32_t tag, std::span<const float> data, Deadline deadline) {
  if (send_broken_) return *send_broken_;
  if (closed_.load(std::memory_order_acquire)) {
    return Status::Error("closed: the link to " + peer_ + " was closed at this end");
  }
  if (closed_there_.load(std::memory_order_acquire) != 0) {
    send_broken_ = Status::Error("closed: " + peer_ + " closed the connection");
    return *send_broken_;
  }
  std::uint8_t header[kMessageHeader];
  codec::StoreLittle(header, kMessageMarker, 4);
  codec::StoreLittle(header + 4, tag, 4);
  codec::StoreLittle(header + 8, data.size_bytes(), 8);
  const auto* payload = reinterpret_cast<const std::uint8_t*>(data.data());
  const std::size_t total = kMessageHeader + data.size_bytes();
  std::size_t sent = 0;
  while (sent < total) {
    const std::size_t want = std::min(total - sent, piece_);
    const auto space_for_piece = [&] {
      return capacity_ - (out_head_ - out_->tail.load(std::memory_order_seq_cst)) >= want;
    };
    const WaitEnd end = Wait(space_for_piece, out_->space_seq, out_->producer_sleeping, deadline);
    if (end != WaitEnd::kReady) {
      const std::string progress =
          " (sent " + std::to_string(sent) + " of " + std::to_string(total) + " bytes)";
      Status failed;
      switch (end) {
        case WaitEnd::kClosedHere:
          failed = Status::Error("closed: the link to " + peer_ + " was closed at this end");
          break;
        case WaitEnd::kPeerGone:
          failed = Status::Error("closed: " + peer_ + " closed the connection during a message" +
                                 progress);
          break;
        default:
          failed = Status::Error("timeout: could not send a message to " + peer_ + " within " +
                                 Ms(Remaining(deadline)) + (sent > 0 ? progress : ""));
          if (sent == 0) return failed;
      }
      send_broken_ = failed;
      return failed;
    }
    // Bytes [sent, sent + want) of header + payload.
    std::size_t done = 0;
    if (sent < kMessageHeader) {
      const std::size_t n = std::min(kMessageHeader - sent, want);
      CopyIn(out_data_, capacity_, out_head_, header + sent, n);
      done = n;
    }
    if (done < want) {
      CopyIn(out_data_, capacity_, out_head_ + done, payload + (sent + done - kMessageHeader),
             want - done);
    }
    out_head_ += want;
    sent += want;
    out_->head.store(out_head_, std::memory_order_seq_cst);
    if (out_->consumer_sleeping.load(std::memory_order_seq_cst) != 0) WakeAll(out_->data_seq);
  }
  return Status::Ok();
}

Result<std::uint32_t> ShmLink::RecvAnyTag(std::span<float> out, Deadline deadline) {
  Result<Received> got = Receive(out, nullptr, nullptr, deadline);
  if (!got.ok()) return got.status();
  return got.value().tag;
}

Result<Link::Received> ShmLink::RecvFold(std::span<float> out, const FoldAccept& accept,
                                         const FoldPiece& fold, Deadline deadline) {
  return Receive(out, &accept, &fold, deadline);
}

Result<Link::Received> ShmLink::Receive(std::span<float> out, const FoldAccept* accept,
                                        const FoldPiece* fold, Deadline deadline) {
  if (recv_broken_) return *recv_broken_;
  if (closed_.load(std::memory_order_acquire)) {
    return Status::Error("closed: the link to " + peer_ + " was closed at this end");
  }
  const std::string timeout_ms = Ms(Remaining(deadline));
  std::size_t want = kMessageHeader;
  const auto available = [&] {
    return in_->head.load(std::memory_order_seq_cst) - in_tail_ >= want;
  };
  std::size_t got = 0, total = kMessageHeader;
  const auto fail = [&](WaitEnd end) -> Status {
    const std::string progress =
        " (got " + std::to_string(got) + " of " + std::to_string(total) + " bytes)";
    switch (end) {
      case WaitEnd::kClosedHere:
        return Status::Error("closed: the link to " + peer_ + " was closed at this end");
      case WaitEnd::kPeerGone:
        recv_broken_ = Status::Error(
            got == 0 ? "closed: " + peer_ + " closed the connection"
                     : "closed: " + peer_ + " closed the connection mid-message" + progress);
        return *recv_broken_;
      default:
        if (got == 0) {
          return Status::Error("timeout: no message within " + timeout_ms + " from " + peer_);
        }
        recv_broken_ = Status::Error("timeout: message from " + peer_ + " incomplete after " +
                                     timeout_ms + progress);
        return *recv_broken_;
    }
  };
  if (WaitEnd end = Wait(available, in_->data_seq, in_->consumer_sleeping, deadline);
      end != WaitEnd::kReady) {
    return fail(end);
  }
  std::uint8_t header[kMessageHeader];
  CopyOut(in_data_, capacity_, in_tail_, header, kMessageHeader);
  const auto marker = static_cast<std::uint32_t>(codec::LoadLittle(header, 4));
  const auto tag = static_cast<std::uint32_t>(codec::LoadLittle(header + 4, 4));
  const std::uint64_t length = codec::LoadLittle(header + 8, 8);
  if (marker != kMessageMarker) {
    recv_broken_ = Status::Error("bad magic: the shared-memory ring from " + peer_ +
                                 " holds no message header");
    return *recv_broken_;
  }
  if (length != out.size_bytes()) {
    recv_broken_ = Status::Error(
        "unexpected frame: expected a message of " + std::to_string(out.size_bytes()) +
        " bytes (" + std::to_string(out.size()) + " floats) from " + peer_ + ", got one of " +
        std::to_string(length) + " bytes");
    return *recv_broken_;
  }
  total = kMessageHeader + static_cast<std::size_t>(length);
  const bool folded = accept != nullptr && (*accept)(tag);
  auto* dst = reinterpret_cast<std::uint8_t*>(out.data());
  std::size_t done = 0;  // payload bytes
  std::size_t unpublished = kMessageHeader;
  in_tail_ += kMessageHeader;
  got = kMessageHeader;
  const auto publish = [&] {
    in_->tail.store(in_tail_, std::memory_order_seq_cst);
    if (in_->producer_sleeping.load(std::memory_order_seq_cst) != 0) WakeAll(in_->space_seq);
    unpublished = 0;
  };
  while (done < length) {
    want = std::min<std::size_t>(length - done, piece_);
    if (!available()) {
      publish();  // the producer may be waiting for this space
      if (WaitEnd end = Wait(available, in_->data_seq, in_->consumer_sleeping, deadline);
          end != WaitEnd::kReady) {
        return fail(end);
      }
    }
    const std::size_t n = std::min<std::size_t>(
        length - done, in_->head.load(std::memory_order_acquire) - in_tail_);
    const std::size_t take = std::min(n, piece_);
    if (folded) {
      // Floats never straddle the ring's end (positions and sizes are multiples of 4); a piece
      // that wraps goes as two.
      const std::size_t at = static_cast<std::size_t>(in_tail_ & (capacity_ - 1));
      const std::size_t first = std::min(take, capacity_ - at);
      const auto floats = [&](std::size_t offset, std::size_t bytes) {
        return std::span<const float>(reinterpret_cast<const float*>(in_data_ + offset),
                                      bytes / sizeof(float));
      };
      (*fold)(done / sizeof(float), floats(at, first));
      if (first < take) (*fold)((done + first) / sizeof(float), floats(0, take - first));
    } else {
      CopyOut(in_data_, capacity_, in_tail_, dst + done, take);
    }
    in_tail_ += take;
    done += take;
    got += take;
    unpublished += take;
    if (unpublished >= piece_ || done == length) publish();
  }
  if (unpublished > 0) publish();
  return Received{.tag = tag, .folded = folded};
}

bool ShmLink::Readable() {
  if (recv_broken_ || closed_.load(std::memory_order_acquire)) return true;
  if (in_->head.load(std::memory_order_acquire) != in_tail_) return true;
  if (closed_there_.load(std::memory_order_acquire) != 0) return true;
  // The socket at most once a millisecond: callers spin on Readable.
  const Clock::time_point now = Clock::now();
  if (now < next_liveness_look_) return false;
  next_liveness_look_ = now + std::chrono::milliseconds(1);
  return PeerGone();
}

Result<std::unique_ptr<Link>> NegotiateLink(net::FrameStream stream, ShmRole role, int self_rank,
                                            int peer_rank, const std::string& peer_label,
                                            Deadline deadline, const ShmOptions& options) {
  const std::string peer = PeerName(stream, peer_rank, peer_label);
  stream.set_sender(static_cast<std::uint32_t>(self_rank));
  // An identity this process cannot read goes out empty: never the same host.
  Result<HostIdentity> me = ThisHost();
  const HostIdentity mine = me.ok() ? me.value() : HostIdentity{};
  const Json hello = {{"v", 1},
                      {"op", "host"},
                      {"boot_id", mine.boot_id},
                      {"net_ns", mine.net_ns},
                      {"ipc_ns", mine.ipc_ns}};
  if (Status s = SendControl(stream, hello, deadline); !s.ok()) {
    return Status::Error("telling " + peer + " where this process runs: " + s.message());
  }
  Result<Json> theirs = ReadControl(stream, "host", peer_rank, deadline);
  if (!theirs.ok()) {
    return Status::Error("asking " + peer + " where it runs: " + theirs.status().message());
  }
  HostIdentity other;
  const Json& j = theirs.value();
  if (const Json* f = Field(j, "boot_id"); f != nullptr && f->is_string()) {
    other.boot_id = f->get<std::string>();
  }
  if (const Json* f = Field(j, "net_ns"); f != nullptr && f->is_number_unsigned()) {
    other.net_ns = f->get<std::uint64_t>();
  }
  if (const Json* f = Field(j, "ipc_ns"); f != nullptr && f->is_number_unsigned()) {
    other.ipc_ns = f->get<std::uint64_t>();
  }
  const auto tcp = [&]() -> Result<std::unique_ptr<Link>> {
    Result<std::unique_ptr<TcpLink>> link =
        TcpLink::Create(std::move(stream), self_rank, peer_rank, peer_label);
    if (!link.ok()) return link.status();
    return std::unique_ptr<Link>(std::move(link).value());
  };
  if (!SameHost(mine, other) || !ValidRingBytes(options.ring_bytes)) return tcp();
  bool declined = false;
  Result<ShmMapping> m =
      SetUpSegment(stream, role, peer_rank, options.ring_bytes, deadline, &declined);
  if (!m.ok()) {
    if (declined) return tcp();  // e.g. /dev/shm full: TCP still works
    return Status::Error("setting up shared memory with " + peer + ": " + m.status().message());
  }
  const std::size_t bytes = m.value().size();
  void* map = m.value().Release();
  stream.set_peer_name(peer);
  return std::unique_ptr<Link>(new ShmLink(std::move(stream), map, bytes, role, peer, options));
}

}  // namespace dtrain::dist
