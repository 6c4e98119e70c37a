#include "core/compress/bf16.h"

#include <bit>

namespace dtrain::compress {
void PackBf16(std::span<const float> in, std::span<float> out) {
  const std::size_t pairs = in.size() / 2;
  for (std::size_t slot = 0; slot < pairs; ++slot) {
    const std::uint32_t low = ToBf16(in[2 * slot]);
    const std::uint32_t high = ToBf16(in[2 * slot + 1]);
    out[slot] = std::bit_cast<float>(low | (high << 16));
  }
  if (in.size() % 2 == 1) out[pairs] = std::bit_cast<float>(std::uint32_t{ToBf16(in.back())});
}

void PackBf16KeepingResidual(std::span<const float> grad, std::span<float> residual,
                             std::span<float> out) {
  // Value i: m = residual + grad, sent as bf16, residual = m - that.
  const auto keep = [&](std::size_t i) {
    const float m = residual[i] + grad[i];
    const std::uint16_t b = ToBf16(m);
    residual[i] = m - FromBf16(b);
    return std::uint32_t{b};
  };
  const std::size_t pairs = grad.size() / 2;
  for (std::size_t slot = 0; slot < pairs; ++slot) {
    const std::uint32_t low = keep(2 * slot);
    const std::uint32_t high = keep(2 * slot + 1);
    out[slot] = std::bit_cast<float>(low | (high << 16));
  }
  if (grad.size() % 2 == 1) out[pairs] = std::bit_cast<float>(keep(grad.size() - 1));
}

}  // namespace dtrain::compress
