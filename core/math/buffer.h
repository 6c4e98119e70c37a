// Aligned contiguous buffers: the storage behind flat parameter, gradient and activation vectors.
//
//   FloatBuffer params(model.NumParams());   // 64-byte aligned, zero-initialised
//   std::span<float> w = std::span(params).subspan(offset, count);
//
// Alignment to a cache line lets BLAS and Eigen use aligned vector loads on every view that
// starts at an aligned offset. Plain containers: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace dtrain::math {

inline constexpr std::size_t kBufferAlignment = 64;

template <typename T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) {}  // NOLINT: rebinding is implicit

  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t(kBufferAlignment)));
  }
  void deallocate(T* p, std::size_t) { ::operator delete(p, std::align_val_t(kBufferAlignment)); }

  template <typename U>
  bool operator==(const AlignedAllocator<U>&) const { return true; }
};

using FloatBuffer = std::vector<float, AlignedAllocator<float>>;
using ByteBuffer = std::vector<std::uint8_t, AlignedAllocator<std::uint8_t>>;

}  // namespace dtrain::math
