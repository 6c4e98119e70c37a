// FrameStream over real sockets: scatter/gather round trips, bit-exact floats, deadlines against
// slow and silent peers, closed peers, hostile headers, version negotiation, and connecting over
// Unix and TCP loopback.
#include "core/net/frame_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "allocation_probe.h"
#include "common/process.h"
#include "common/stream_pair.h"
#include "common/temp_dir.h"
#include "common/text_checks.h"
#include "core/net/socket.h"

namespace dtrain::net {
namespace frame_stream_test {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::ConnectedStreams;
using testing::kGenerous;
using testing::Mentions;
using testing::StartsWith;
using testing::StreamPair;

std::span<const std::uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

// Writes raw bytes, bypassing the framing (for malformed and slow peers).
void SendRaw(int fd, std::span<const std::uint8_t> bytes) {
  BOOST_TEST_REQUIRE(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
                     static_cast<ssize_t>(bytes.size()));
}

std::array<std::uint8_t, kHeaderSize> Header(MessageType type, std::uint32_t length,
                                             std::uint32_t crc = 0) {
  std::array<std::uint8_t, kHeaderSize> bytes{};
  EncodeHeader({.type = type, .length = length, .crc = crc}, bytes);
  return bytes;
}

std::vector<std::uint32_t> Bits(std::span<const float> values) {
  std::vector<std::uint32_t> bits;
  for (float f : values) bits.push_back(std::bit_cast<std::uint32_t>(f));
  return bits;
}

// Accepts one connection within the deadline.
FrameStream Accept(int listen_fd) {
  pollfd p{.fd = listen_fd, .events = POLLIN, .revents = 0};
  BOOST_TEST_REQUIRE(::poll(&p, 1, 5000) == 1);
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
  BOOST_TEST_REQUIRE(fd >= 0);
  return FrameStream(fd);
}

BOOST_AUTO_TEST_SUITE(net_frame_stream)

BOOST_AUTO_TEST_CASE(scatter_write_reads_back_as_one_payload) {
  StreamPair p = ConnectedStreams();
  const std::string one = R"({"v":1,"op":)", two = R"("status",)", three = R"("job":42})";
  const std::span<const std::uint8_t> parts[] = {Bytes(one), Bytes(two), Bytes(three)};
  BOOST_TEST_REQUIRE(p.client.Write(MessageType::kControl, 42, 3, 17, parts, 1s).ok());
  BOOST_TEST(!p.client.LastError().has_value());
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(f.ok(), f.status().message());
  BOOST_TEST(f.value().payload == one + two + three);
  BOOST_TEST((f.value().header.type == MessageType::kControl));
  BOOST_TEST(f.value().header.job == 42u);
  BOOST_TEST(f.value().header.sender == 3u);
  BOOST_TEST(f.value().header.tag == 17u);
  BOOST_TEST(f.value().header.length == (one + two + three).size());
}

BOOST_AUTO_TEST_CASE(write_string_uses_the_streams_sender_and_empty_payloads_work) {
  StreamPair p = ConnectedStreams();
  p.client.set_sender(5);
  BOOST_TEST_REQUIRE(p.client.WriteString(MessageType::kHeartbeat, 9, 1, "", 1s).ok());
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(f.ok(), f.status().message());
  BOOST_TEST(f.value().header.sender == 5u);
  BOOST_TEST((f.value().header.type == MessageType::kHeartbeat));
  BOOST_TEST(f.value().payload.empty());
}

BOOST_AUTO_TEST_CASE(floats_arrive_bit_exact) {
  const std::vector<float> values = {
      1.0f,
      -0.0f,
      0.0f,
      std::bit_cast<float>(0x7FC01234u),  // quiet NaN with a payload
      std::bit_cast<float>(0xFFA00001u),  // negative signalling NaN with a payload
      std::bit_cast<float>(0x00000001u),  // smallest denormal
      std::bit_cast<float>(0x807FFFFFu),  // largest negative denormal
      INFINITY,
      -INFINITY,
      3.4028235e38f,
      -1.17549435e-38f,
  };
  StreamPair p = ConnectedStreams();
  const std::span<const float> all(values);
  const std::span<const std::uint8_t> parts[] = {FloatBytes(all.first(4)),
                                                 FloatBytes(all.subspan(4))};
  BOOST_TEST_REQUIRE(p.client.Write(MessageType::kFloats, 1, 0, 7, parts, 1s).ok());
  std::vector<float> out(values.size(), 42.0f);
  Result<FrameHeader> h = p.server.ReadFloatsInto(out, 1s);
  BOOST_TEST_REQUIRE(h.ok(), h.status().message());
  BOOST_TEST(h.value().tag == 7u);
  BOOST_TEST(Bits(out) == Bits(values), boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(large_float_frame_survives_partial_writes_and_many_parts) {
  // 4 MiB through a socket buffer far smaller than that, from 256 parts (more than one sendmsg
  // takes), half of them empty.
  std::vector<float> values(1 << 20);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.5f - 7.0f;
  std::vector<std::span<const std::uint8_t>> parts;
  const std::size_t step = values.size() / 128;
  for (std::size_t at = 0; at < values.size(); at += step) {
    parts.push_back(FloatBytes(std::span<const float>(values).subspan(at, step)));
    parts.push_back({});
  }
  StreamPair p = ConnectedStreams();
  Status written;
  std::thread writer([&] { written = p.client.Write(MessageType::kFloats, 1, 2, 3, parts, 10s); });
  std::vector<float> out(values.size());
  Result<FrameHeader> h = p.server.ReadFloatsInto(out, 10s);
  writer.join();
  BOOST_TEST_REQUIRE(written.ok(), written.message());
  BOOST_TEST_REQUIRE(h.ok(), h.status().message());
  BOOST_TEST(std::memcmp(out.data(), values.data(), values.size() * sizeof(float)) == 0);
}

BOOST_AUTO_TEST_CASE(float_frames_queued_back_to_back_are_read_one_at_a_time) {
  // All three are in the socket when the first read starts: reading a header with what has come
  // of its payload must take that frame's bytes and none of the next.
  StreamPair p = ConnectedStreams();
  for (std::uint32_t tag = 1; tag <= 3; ++tag) {
    const std::vector<float> values(5, static_cast<float>(tag));
    const std::span<const std::uint8_t> part = FloatBytes(values);
    BOOST_TEST_REQUIRE(p.client.Write(MessageType::kFloats, 1, 0, tag, {&part, 1}, 1s).ok());
  }
  for (std::uint32_t tag = 1; tag <= 3; ++tag) {
    std::vector<float> out(5);
    Result<FrameHeader> h = p.server.ReadFloatsInto(out, 1s);
    BOOST_TEST_REQUIRE(h.ok(), h.status().message());
    BOOST_TEST(h.value().tag == tag);
    BOOST_TEST(out == std::vector<float>(5, static_cast<float>(tag)),
               boost::test_tools::per_element());
  }
}

BOOST_AUTO_TEST_CASE(float_frame_of_the_wrong_size_or_type_is_refused) {
  const std::vector<float> ten(10, 1.5f);
  {
    StreamPair p = ConnectedStreams();
    const std::span<const std::uint8_t> part = FloatBytes(ten);
    BOOST_TEST_REQUIRE(p.client.Write(MessageType::kFloats, 1, 0, 0, {&part, 1}, 1s).ok());
    std::vector<float> nine(9);
    Result<FrameHeader> h = p.server.ReadFloatsInto(nine, 1s);
    BOOST_TEST_REQUIRE(!h.ok());
    BOOST_TEST(StartsWith(h.status().message(), "unexpected frame: "));
    BOOST_TEST(Mentions(h.status().message(), "36 bytes (9 floats)"));
    BOOST_TEST(Mentions(h.status().message(), "floats frame of 40 bytes"));
    BOOST_TEST((p.server.LastError() == FrameError::kUnexpected));
  }
  {
    StreamPair p = ConnectedStreams();
    BOOST_TEST_REQUIRE(
        p.client.WriteString(MessageType::kControl, 1, 0, "0123456789abcdef", 1s).ok());
    std::vector<float> four(4);
    Result<FrameHeader> h = p.server.ReadFloatsInto(four, 1s);
    BOOST_TEST_REQUIRE(!h.ok());
    BOOST_TEST(Mentions(h.status().message(), "got a control frame of 16 bytes"));
  }
}

BOOST_AUTO_TEST_CASE(float_frame_larger_than_max_payload_fits_a_matching_buffer) {
  StreamPair p = ConnectedStreams(/*max_payload=*/64);
  const std::vector<float> values(100, 2.0f);  // 400 bytes
  const std::span<const std::uint8_t> part = FloatBytes(values);
  BOOST_TEST_REQUIRE(p.client.Write(MessageType::kFloats, 1, 0, 0, {&part, 1}, 1s).ok());
  std::vector<float> out(values.size());
  Result<FrameHeader> h = p.server.ReadFloatsInto(out, 1s);
  BOOST_TEST_REQUIRE(h.ok(), h.status().message());
  BOOST_TEST(out == values);
}

BOOST_AUTO_TEST_CASE(timeout_before_any_byte_can_be_retried) {
  StreamPair p = ConnectedStreams();
  Result<Frame> none = p.server.Read(50ms);
  BOOST_TEST_REQUIRE(!none.ok());
  BOOST_TEST(StartsWith(none.status().message(), "timeout: no frame within 50 ms from "));
  BOOST_TEST((none.status().code() == StatusCode::kTimeout));
  BOOST_TEST((p.server.LastError() == FrameError::kTimeout));
  BOOST_TEST_REQUIRE(p.client.WriteString(MessageType::kControl, 0, 0, R"({"v":1})", 1s).ok());
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(f.ok(), f.status().message());
  BOOST_TEST(f.value().payload == R"({"v":1})");
  BOOST_TEST(!p.server.LastError().has_value());
}

BOOST_AUTO_TEST_CASE(dribbling_peer_hits_the_whole_frame_deadline) {
  StreamPair p = ConnectedStreams();
  const std::string payload(100, 'x');
  const std::string frame = EncodeFrame(MessageType::kControl, 0, kNoSender, 0, payload);
  const int fd = p.client.fd();
  std::jthread dribbler([fd, &frame](std::stop_token stop) {
    if (::send(fd, frame.data(), kHeaderSize, MSG_NOSIGNAL) != ssize_t{kHeaderSize}) return;
    for (std::size_t i = kHeaderSize; i < frame.size() && !stop.stop_requested(); ++i) {
      std::this_thread::sleep_for(200ms);
      if (::send(fd, frame.data() + i, 1, MSG_NOSIGNAL) != 1) return;
    }
  });
  const Clock::time_point start = Clock::now();
  Result<Frame> f = p.server.Read(500ms);
  const Clock::duration took = Clock::now() - start;
  dribbler.request_stop();
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(StartsWith(f.status().message(), "timeout: frame from "));
  BOOST_TEST(Mentions(f.status().message(), "incomplete after 500 ms"));
  BOOST_TEST((p.server.LastError() == FrameError::kTimeout));
  BOOST_TEST((took >= 500ms));     // the deadline never fires early...
  BOOST_TEST((took < kGenerous));  // ...and bounds the whole frame, not each byte (100 × 200 ms)
  // The frame is lost half-read: the stream refuses to read on instead of parsing a payload tail.
  Result<Frame> again = p.server.Read(10s);
  BOOST_TEST_REQUIRE(!again.ok());
  BOOST_TEST(again.status().message() == f.status().message());
  BOOST_TEST((again.status().code() == StatusCode::kTimeout));
}

BOOST_AUTO_TEST_CASE(peer_closing_mid_frame_is_closed) {
  StreamPair p = ConnectedStreams();
  const std::string frame = EncodeFrame(MessageType::kControl, 0, kNoSender, 0, "0123456789");
  SendRaw(p.client.fd(), Bytes(frame).first(kHeaderSize + 4));
  p.client.Close();
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(StartsWith(f.status().message(), "closed: "));
  BOOST_TEST(Mentions(f.status().message(), "mid-frame (got 36 of 42 bytes)"));
  BOOST_TEST((f.status().code() == StatusCode::kClosed));
  BOOST_TEST((p.server.LastError() == FrameError::kClosed));
}

BOOST_AUTO_TEST_CASE(peer_closing_between_frames_is_closed) {
  StreamPair p = ConnectedStreams();
  p.client.Close();
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(StartsWith(f.status().message(), "closed: "));
  BOOST_TEST((f.status().code() == StatusCode::kClosed));
  BOOST_TEST((p.server.LastError() == FrameError::kClosed));
}

BOOST_AUTO_TEST_CASE(header_claiming_four_gigabytes_is_refused_at_once) {
  StreamPair p = ConnectedStreams();
  SendRaw(p.client.fd(), Header(MessageType::kControl, 0xFFFFFFFF));
  const Clock::time_point start = Clock::now();
  std::size_t largest = 0;
  Result<Frame> f = Status::Error("not read");
  {
    testing::AllocationProbe probe;
    f = p.server.Read(30s);
    largest = probe.largest();
  }
  BOOST_TEST((Clock::now() - start < kGenerous));  // did not wait for 4 GiB to arrive
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(f.status().message() == "too large: control frame of 4294967295 bytes from " +
                                         p.server.peer() + " exceeds the 67108864-byte limit");
  BOOST_TEST((f.status().code() == StatusCode::kError));  // LastError tells kTooLarge apart
  BOOST_TEST((p.server.LastError() == FrameError::kTooLarge));
  BOOST_TEST(largest < 4096u);  // only the error message
}

BOOST_AUTO_TEST_CASE(claimed_length_costs_only_what_arrives) {
  // 32 MiB is within the limit, but the peer sends 100 bytes and leaves: the reader must not have
  // reserved the claimed size up front.
  StreamPair p = ConnectedStreams();
  SendRaw(p.client.fd(), Header(MessageType::kCheckpoint, 32u << 20));
  SendRaw(p.client.fd(), Bytes(std::string(100, 'c')));
  p.client.Close();
  std::size_t largest = 0;
  Result<Frame> f = Status::Error("not read");
  {
    testing::AllocationProbe probe;
    f = p.server.Read(5s);
    largest = probe.largest();
  }
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(StartsWith(f.status().message(), "closed: "));
  BOOST_TEST(largest < (1u << 20));
}

BOOST_AUTO_TEST_CASE(stranger_bytes_are_bad_magic) {
  StreamPair p = ConnectedStreams();
  std::string request = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
  request.resize(kHeaderSize);
  SendRaw(p.client.fd(), Bytes(request));
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(StartsWith(f.status().message(), "bad magic: "));
  BOOST_TEST(Mentions(f.status().message(), "sent \"GET \""));
  BOOST_TEST((p.server.LastError() == FrameError::kBadMagic));
}

BOOST_AUTO_TEST_CASE(damaged_payload_is_a_bad_checksum) {
  StreamPair p = ConnectedStreams();
  std::string frame = EncodeFrame(MessageType::kControl, 0, kNoSender, 0, R"({"v":1})");
  frame.back() ^= 0x20;
  SendRaw(p.client.fd(), Bytes(frame));
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(StartsWith(f.status().message(), "bad checksum: control frame of 7 bytes"));
  BOOST_TEST((p.server.LastError() == FrameError::kBadChecksum));
}

BOOST_AUTO_TEST_CASE(damage_in_a_late_piece_of_a_float_frame_is_a_bad_checksum) {
  // The receiver checksums each piece as it arrives; a flipped bit in the last one still counts.
  std::vector<float> values(4096);
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) - 100.0f;
  const std::span<const std::uint8_t> payload = FloatBytes(values);
  std::vector<std::uint8_t> damaged(payload.begin(), payload.end());
  damaged[damaged.size() - 3] ^= 0x04;
  const std::span<const std::uint8_t> intact[] = {payload};
  StreamPair p = ConnectedStreams();
  SendRaw(p.client.fd(), Header(MessageType::kFloats, static_cast<std::uint32_t>(payload.size()),
                                PayloadCrc(intact)));
  const std::size_t half = damaged.size() / 2;
  SendRaw(p.client.fd(), std::span<const std::uint8_t>(damaged).first(half));
  std::thread late([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the reader has the first half
    SendRaw(p.client.fd(), std::span<const std::uint8_t>(damaged).subspan(half));
  });
  std::vector<float> out(values.size());
  Result<FrameHeader> h = p.server.ReadFloatsInto(out, 5s);
  late.join();
  BOOST_TEST_REQUIRE(!h.ok());
  BOOST_TEST(StartsWith(h.status().message(), "bad checksum: floats frame of 16384 bytes"),
             h.status().message());
  BOOST_TEST((p.server.LastError() == FrameError::kBadChecksum));
}

BOOST_AUTO_TEST_CASE(unchecked_floats_carry_crc_zero_and_are_read_as_floats) {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f};
  StreamPair p = ConnectedStreams();
  const std::span<const std::uint8_t> payload[] = {FloatBytes(values)};
  BOOST_TEST_REQUIRE(p.client.Write(MessageType::kUncheckedFloats, 0, 0, 9, payload, 1s).ok());
  std::vector<float> out(values.size());
  Result<FrameHeader> h = p.server.ReadFloatsInto(out, 1s);
  BOOST_TEST_REQUIRE(h.ok(), h.status().message());
  BOOST_TEST(h.value().crc == 0u);
  BOOST_TEST((h.value().type == MessageType::kUncheckedFloats));
  BOOST_TEST(Bits(out) == Bits(values), boost::test_tools::per_element());

  // Damage goes unnoticed (that is what the job chose), but a CRC field that is not 0 is not an
  // unchecked frame: refused like any bad checksum.
  std::array<std::uint8_t, kHeaderSize> header = Header(MessageType::kUncheckedFloats, 4, 0x1234);
  SendRaw(p.client.fd(), header);
  SendRaw(p.client.fd(), FloatBytes(std::span(values).first(1)));
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(StartsWith(f.status().message(), "bad checksum: unchecked floats frame from"),
             f.status().message());
  BOOST_TEST((p.server.LastError() == FrameError::kBadChecksum));
}

BOOST_AUTO_TEST_CASE(other_version_gets_a_version_mismatch_reply) {
  StreamPair p = ConnectedStreams();
  std::array<std::uint8_t, kHeaderSize> v2 = Header(MessageType::kControl, 0);
  v2[4] = 2;  // version 2
  SendRaw(p.client.fd(), v2);
  Result<Frame> f = p.server.Read(1s);
  BOOST_TEST_REQUIRE(!f.ok());
  BOOST_TEST(StartsWith(f.status().message(), "version mismatch: "));
  BOOST_TEST(Mentions(f.status().message(), "speaks protocol version 2, this side speaks 1"));
  BOOST_TEST((p.server.LastError() == FrameError::kVersionMismatch));

  Result<Frame> reply = p.client.Read(1s);
  BOOST_TEST_REQUIRE(reply.ok(), reply.status().message());
  BOOST_TEST((reply.value().header.type == MessageType::kVersionMismatch));
  BOOST_TEST(reply.value().payload == R"({"v":1,"error":"version mismatch","supported":[1]})");
}

BOOST_AUTO_TEST_CASE(write_to_a_silent_peer_hits_its_deadline) {
  StreamPair p = ConnectedStreams();
  const std::vector<float> big(2 << 20);  // 8 MiB: more than the socket buffers hold
  const std::span<const std::uint8_t> part = FloatBytes(big);
  const Clock::time_point start = Clock::now();
  Status s = p.client.Write(MessageType::kFloats, 1, 0, 0, {&part, 1}, 300ms);
  BOOST_TEST((Clock::now() - start < kGenerous));
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(StartsWith(s.message(), "timeout: could not send a floats frame of 8388608 bytes"));
  BOOST_TEST((s.code() == StatusCode::kTimeout));
  BOOST_TEST((p.client.LastError() == FrameError::kTimeout));
  // Half a frame is on the wire: further writes would corrupt the stream, so they fail.
  Status again = p.client.WriteString(MessageType::kHeartbeat, 0, 0, "", 1s);
  BOOST_TEST(again.message() == s.message());
}

BOOST_AUTO_TEST_CASE(write_to_a_closed_peer_is_an_error_not_sigpipe) {
  StreamPair p = ConnectedStreams();
  p.server.Close();
  Status s = p.client.WriteString(MessageType::kControl, 0, 0, R"({"v":1})", 1s);
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(StartsWith(s.message(), "closed: "));
  BOOST_TEST((s.code() == StatusCode::kClosed));
  BOOST_TEST((p.client.LastError() == FrameError::kClosed));
}

BOOST_AUTO_TEST_CASE(closed_and_moved_streams) {
  StreamPair p = ConnectedStreams();
  FrameStream moved(std::move(p.client));
  BOOST_TEST(p.client.fd() ==
             -1);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  BOOST_TEST_REQUIRE(moved.WriteString(MessageType::kControl, 0, 0, "x", 1s).ok());
  BOOST_TEST_REQUIRE(p.server.Read(1s).ok());
  moved.Close();
  BOOST_TEST(moved.fd() == -1);
  Status s = moved.WriteString(MessageType::kControl, 0, 0, "x", 1s);
  BOOST_TEST(StartsWith(s.message(), "closed: "));
  BOOST_TEST((moved.LastError() == FrameError::kClosed));
}

BOOST_AUTO_TEST_CASE(unix_connect_to_a_listening_socket) {
  testing::TempDir dir;
  const std::string path = dir.Path("ctl.sock");
  Result<int> listener = ListenUnix(path, 4);
  BOOST_TEST_REQUIRE(listener.ok(), listener.status().message());
  struct stat st {};
  BOOST_TEST_REQUIRE(::stat(path.c_str(), &st) == 0);
  BOOST_TEST(S_ISSOCK(st.st_mode));
  BOOST_TEST((st.st_mode & 0777) == 0660u);

  Result<FrameStream> client = FrameStream::ConnectUnix(path, 2s);
  BOOST_TEST_REQUIRE(client.ok(), client.status().message());
  BOOST_TEST(client.value().peer() == "unix:" + path);
  FrameStream server = Accept(listener.value());
  BOOST_TEST(Mentions(server.peer(), "unix peer pid "));
  BOOST_TEST_REQUIRE(
      client.value().WriteString(MessageType::kControl, 0, 1, R"({"v":1,"op":"list"})", 1s).ok());
  Result<Frame> request = server.Read(1s);
  BOOST_TEST_REQUIRE(request.ok(), request.status().message());
  BOOST_TEST(request.value().payload == R"({"v":1,"op":"list"})");
  BOOST_TEST_REQUIRE(
      server.WriteString(MessageType::kControl, 0, 1, R"({"v":1,"jobs":[]})", 1s).ok());
  Result<Frame> reply = client.value().Read(1s);
  BOOST_TEST_REQUIRE(reply.ok(), reply.status().message());
  BOOST_TEST(reply.value().payload == R"({"v":1,"jobs":[]})");
  ::close(listener.value());
}

BOOST_AUTO_TEST_CASE(listen_replaces_a_stale_socket_only) {
  testing::TempDir dir;
  const std::string path = dir.Path("ctl.sock");
  Result<int> first = ListenUnix(path, 4);
  BOOST_TEST_REQUIRE(first.ok(), first.status().message());
  Result<int> live = ListenUnix(path, 4);
  BOOST_TEST_REQUIRE(!live.ok());
  BOOST_TEST(Mentions(live.status().message(), "a running server is listening there"));

  ::close(first.value());  // the server dies; its socket file stays behind
  Result<int> second = ListenUnix(path, 4);
  BOOST_TEST_REQUIRE(second.ok(), second.status().message());
  ::close(second.value());

  const std::string file = dir.Write("notes.txt", "keep me");
  Result<int> not_socket = ListenUnix(file, 4);
  BOOST_TEST_REQUIRE(!not_socket.ok());
  BOOST_TEST(Mentions(not_socket.status().message(), "is not a socket"));
  BOOST_TEST(testing::ReadFile(file) == "keep me");
}

BOOST_AUTO_TEST_CASE(unix_connect_to_a_missing_path_fails_fast_naming_it) {
  testing::TempDir dir;
  const std::string path = dir.Path("missing.sock");
  const Clock::time_point start = Clock::now();
  Result<FrameStream> s = FrameStream::ConnectUnix(path, 30s);
  BOOST_TEST((Clock::now() - start < kGenerous));
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(StartsWith(s.status().message(), "io: "));
  BOOST_TEST(Mentions(s.status().message(), path));
  BOOST_TEST(Mentions(s.status().message(), "No such file or directory"));
}

// A loopback port that is bound but not listening: connecting to it is refused, and nobody else
// can take it while the socket lives.
struct ClosedPort {
  ClosedPort() {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    BOOST_TEST_REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    socklen_t len = sizeof addr;
    BOOST_TEST_REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port = ntohs(addr.sin_port);
  }
  ~ClosedPort() { ::close(fd); }
  int fd = -1;
  std::uint16_t port = 0;
};

BOOST_AUTO_TEST_CASE(tcp_connect_to_a_closed_port_is_refused_clearly) {
  ClosedPort closed;
  const Clock::time_point start = Clock::now();
  Result<FrameStream> s = FrameStream::ConnectTcp("127.0.0.1", closed.port, 30s);
  BOOST_TEST((Clock::now() - start < kGenerous));
  BOOST_TEST_REQUIRE(!s.ok());
  BOOST_TEST(s.status().message() == "io: cannot connect to 127.0.0.1:" +
                                         std::to_string(closed.port) + ": Connection refused");
}

BOOST_AUTO_TEST_CASE(tcp_connect_sets_nodelay_and_carries_frames) {
  ClosedPort port;  // bound to a free loopback port; listening makes it open
  BOOST_TEST_REQUIRE(::listen(port.fd, 4) == 0);
  Result<FrameStream> client = FrameStream::ConnectTcp("127.0.0.1", port.port, 2s);
  BOOST_TEST_REQUIRE(client.ok(), client.status().message());
  BOOST_TEST(client.value().peer() == "127.0.0.1:" + std::to_string(port.port));
  int nodelay = 0;
  socklen_t len = sizeof nodelay;
  BOOST_TEST_REQUIRE(::getsockopt(client.value().fd(), IPPROTO_TCP, TCP_NODELAY, &nodelay, &len) ==
                     0);
  BOOST_TEST(nodelay != 0);

  FrameStream server = Accept(port.fd);
  const std::vector<float> grad = {0.25f, -1.0f, 3.0f};
  const std::span<const std::uint8_t> part = FloatBytes(grad);
  BOOST_TEST_REQUIRE(client.value().Write(MessageType::kFloats, 9, 1, 4, {&part, 1}, 1s).ok());
  std::vector<float> out(3);
  Result<FrameHeader> h = server.ReadFloatsInto(out, 1s);
  BOOST_TEST_REQUIRE(h.ok(), h.status().message());
  BOOST_TEST(out == grad);
  BOOST_TEST(h.value().sender == 1u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace frame_stream_test
}  // namespace dtrain::net
