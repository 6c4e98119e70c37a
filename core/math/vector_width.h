// DTRAIN_AT_VECTOR_WIDTH marks a function of plain loops to be built three times — for AVX-512,
// for AVX2 and for any x86-64 — and the build for the CPU picked when the program loads (GCC's
// target_clones), so the shipped binary, compiled for any x86-64, runs those loops 16 or 8
// floats at a time where the CPU can.
//
//   DTRAIN_AT_VECTOR_WIDTH
//   void Scale(std::size_t n, float a, float* x) { for (std::size_t i = 0; i < n; ++i) x[i] *= a; }
//
// Where every build must give the same bits, the file is compiled without fused multiply-adds
// (-ffp-contract=off, core/CMakeLists.txt): the AVX-512 and AVX2 builds could fuse otherwise.
#pragma once

#if defined(__x86_64__)
#define DTRAIN_AT_VECTOR_WIDTH __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define DTRAIN_AT_VECTOR_WIDTH
#endif
