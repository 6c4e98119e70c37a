// Fuzz target: a parameter-server shard's side of compressed pushes (core/dist/push_codec.h,
// ps_protocol.md "Compressed pushes"): the encoding a worker's hello announces, then an encoded
// push's data decoded into the shard's slice; and the same header and data as a residual request
// (ps_protocol.md "Residuals"), deposited with a ResidualDeposits (residual_deposits.h) of
// `workers % 4 + 1` workers over the slice collecting step `steps`. Input: the slice's size (u16,
// little-endian), a header (kPsHeaderFloats floats), then the data floats (a ragged tail is
// dropped). Invariants: no crash, no allocation beyond what the slice's size allows (a sparse
// hello's k is at most the slice), nothing written outside the slice; data of another length than
// the hello fixed is refused; a decoded sparse push has at most k non-zero values, a decoded bf16
// push every value with a zero low half; a deposit is taken only from a rank the shard serves, for
// the step collected, of the slice's size, and then comes back as sent.
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "core/dist/push_codec.h"
#include "core/dist/residual_deposits.h"

namespace {

// `header` and `message` as worker header.from's residual request.
void Deposit(const dtrain::dist::PsHeader& header, std::span<const float> message,
             std::size_t slice) {
  const std::size_t workers = header.workers % 4 + 1;
  dtrain::dist::ResidualDeposits deposits(workers, slice);
  deposits.Begin(header.steps);
  const int rank = static_cast<int>(header.from);
  const bool fits =
      header.from < workers && header.clock == header.steps && message.size() == slice;
  if (deposits.Deposit(rank, header.clock, message).ok() != fits) std::abort();
  if (deposits.Complete() != (fits && workers == 1)) std::abort();
  if (!fits) return;
  const std::span<const float> kept = deposits.Slices()[header.from];
  if (!message.empty() && std::memcmp(kept.data(), message.data(), message.size_bytes()) != 0) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace dtrain::dist;
  constexpr std::size_t kHeaderBytes = kPsHeaderFloats * sizeof(float);
  if (size < 2 + kHeaderBytes) return 0;
  const std::size_t slice = data[0] | (static_cast<std::size_t>(data[1]) << 8);
  std::array<float, kPsHeaderFloats> raw;
  std::memcpy(raw.data(), data + 2, kHeaderBytes);
  const auto hello = DecodePsHeader(raw);
  if (!hello.ok()) return 0;
  const std::size_t floats = (size - 2 - kHeaderBytes) / sizeof(float);
  std::vector<float> message(floats);
  if (floats > 0) std::memcpy(message.data(), data + 2 + kHeaderBytes, floats * sizeof(float));
  Deposit(hello.value(), message, slice);
  auto decoder = PushDecoder::FromHello(hello.value(), slice);
  if (!decoder.ok()) return 0;
  if (decoder.value().EncodedFloats() > 2 * slice + 1) std::abort();
  // One guard float on each side of the slice: the decoder must leave them.
  std::vector<float> out(slice + 2, 7.0f);
  const auto decoded = decoder.value().Decode(message, std::span(out).subspan(1, slice));
  if (out.front() != 7.0f || out.back() != 7.0f) std::abort();
  if (!decoded.ok()) return 0;
  if (floats != decoder.value().EncodedFloats()) std::abort();
  std::size_t non_zero = 0;
  for (std::size_t i = 1; i <= slice; ++i) {
    if (out[i] != 0.0f) ++non_zero;
    const bool bf16 = (hello.value().flags & kPsBf16Pushes) != 0;
    if (bf16 && (std::bit_cast<std::uint32_t>(out[i]) & 0xFFFFu) != 0) std::abort();
  }
  if ((hello.value().flags & kPsSparsePushes) != 0 && non_zero > hello.value().rows) std::abort();
  return 0;
}
