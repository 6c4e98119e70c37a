#include "core/compress/bf16.h"

#include <bit>

#include "core/math/vector_width.h"

namespace dtrain::compress {
namespace {

static_assert(std::endian::native == std::endian::little,
              "a packed slot's low half (value 2i) is the 16 bits at its lower address");

// A float slot's halves as 16-bit values in memory order: value i of a packed array is
// Halves(slots)[i] (the low half of slot i / 2 first, on a little-endian CPU).
using Half = std::uint16_t __attribute__((may_alias));
Half* Halves(float* slots) { return reinterpret_cast<Half*>(slots); }
const Half* Halves(const float* slots) { return reinterpret_cast<const Half*>(slots); }

DTRAIN_AT_VECTOR_WIDTH
void Pack(const float* in, std::size_t n, Half* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = ToBf16(in[i]);
}

// Value i: m = residual + grad, sent as bf16, residual = m - that.
DTRAIN_AT_VECTOR_WIDTH
void PackKeeping(const float* grad, float* residual, std::size_t n, Half* out) {
  for (std::size_t i = 0; i < n; ++i) {
    const float m = residual[i] + grad[i];
    const std::uint16_t b = ToBf16(m);
    residual[i] = m - FromBf16(b);
    out[i] = b;
  }
}

DTRAIN_AT_VECTOR_WIDTH
void Unpack(const Half* packed, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] = FromBf16(packed[i]);
}

DTRAIN_AT_VECTOR_WIDTH
void AddUnpacked(const Half* packed, std::size_t n, float* sums) {
  for (std::size_t i = 0; i < n; ++i) sums[i] += FromBf16(packed[i]);
}

// A last odd slot's high half is 0.
void ClearLastHigh(std::size_t values, std::span<float> out) {
  if (values % 2 == 1) Halves(out.data())[values] = 0;
}

}  // namespace

void PackBf16(std::span<const float> in, std::span<float> out) {
  Pack(in.data(), in.size(), Halves(out.data()));
  ClearLastHigh(in.size(), out);
}

void PackBf16KeepingResidual(std::span<const float> grad, std::span<float> residual,
                             std::span<float> out) {
  PackKeeping(grad.data(), residual.data(), grad.size(), Halves(out.data()));
  ClearLastHigh(grad.size(), out);
}

void UnpackBf16(std::span<const float> packed, std::span<float> out) {
  Unpack(Halves(packed.data()), out.size(), out.data());
}

void AddUnpackedBf16(std::span<const float> packed, std::span<float> sums) {
  AddUnpacked(Halves(packed.data()), sums.size(), sums.data());
}

}  // namespace dtrain::compress
