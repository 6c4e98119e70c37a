// UseBestBlasKernels: makes OpenBLAS run the fastest kernels this CPU supports, and OpenMP's
// idle threads sleep.
//
//   int main(int argc, char** argv) { math::UseBestBlasKernels(); ... }
//
// Debian 12's OpenBLAS (0.3.21) does not recognise recent Intel cores (Sapphire Rapids, for
// one) and falls back to its generic "Prescott" SSE kernels, which run sgemm 4-5x slower than
// the AVX-512 ones the same CPU executes. OpenBLAS picks its kernels while it loads, before main,
// reading OPENBLAS_CORETYPE then; so a process that finds itself on such a fallback sets that
// variable to the best core type the CPU supports (SkylakeX with AVX-512, else Haswell with
// AVX2+FMA) and executes itself again, once, with the arguments it was started with. A variable
// already set (by the user, or by the first execution) is left alone, and so is a correct
// detection. Child processes inherit the variable, so every process of a job runs the same kernels
// (their float results agree). In the same way it sets OMP_WAIT_POLICY=PASSIVE unless set, read
// by the OpenMP runtime (oneDNN's threads, core/math/dnnl_runtime.h) as it loads: its idle threads
// sleep instead of spinning on the cores OpenBLAS's threads then work on (spinning, the CNN
// example's step with 2 BLAS threads ran at a third of the speed). Call first thing in main,
// before any thread starts; returns unless it re-executes.
#pragma once

namespace dtrain::math {

void UseBestBlasKernels();

// The kernel set OpenBLAS runs in this process ("SkylakeX", "Haswell", "Prescott", ...).
const char* BlasCoreName();

}  // namespace dtrain::math
