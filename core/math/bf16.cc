#include "core/math/bf16.h"

#include <cstddef>

namespace dtrain::math {
namespace {

// The same loop compiled twice: for any x86-64, and for AVX-512 (chosen at run time, so a build
// for every x86-64 still converts 16 values an instruction where it can).
template <typename Row>
void EachRow(const float* in, int rows, int cols, int ld, std::uint16_t* out, Row row) {
  for (int r = 0; r < rows; ++r) {
    row(in + static_cast<std::ptrdiff_t>(r) * ld, cols,
        out + static_cast<std::ptrdiff_t>(r) * cols);
  }
}

void RowToBf16(const float* in, int n, std::uint16_t* out) {
  for (int i = 0; i < n; ++i) out[i] = ToBf16(in[i]);
}

__attribute__((target("avx512f,avx512bw"))) void RowToBf16Avx512(const float* in, int n,
                                                                 std::uint16_t* out) {
  for (int i = 0; i < n; ++i) out[i] = ToBf16(in[i]);
}

}  // namespace

void ToBf16Rows(const float* in, int rows, int cols, int ld, std::uint16_t* out) {
  static const bool avx512 = __builtin_cpu_supports("avx512bw") != 0;
  if (avx512) {
    EachRow(in, rows, cols, ld, out, RowToBf16Avx512);
  } else {
    EachRow(in, rows, cols, ld, out, RowToBf16);
  }
}

}  // namespace dtrain::math
