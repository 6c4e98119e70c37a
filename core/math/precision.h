// The precision of a process's matrix products and convolutions (a job's train.precision):
// float32 throughout, or bfloat16 inputs — each product's operands rounded to bf16 (math::ToBf16)
// and multiplied by oneDNN's AMX or AVX512_BF16 kernels, summed in float32 into float32 outputs.
// Weights, gradients, optimizer state, reductions, checkpoints and model files stay float32.
//
//   if (Bf16Support s = NativeBf16(); s.native) SetPrecision(Precision::kBf16);
//
// Fixed per process before training (tests switch it between cases); read by Gemm (gemm.h) and
// DnnlConv (dnnl_conv.h) at every call. kBf16 may be set only where NativeBf16().native.
#pragma once

#include <string>

namespace dtrain::math {

enum class Precision { kFp32, kBf16 };

Precision CurrentPrecision();
void SetPrecision(Precision precision);
// "fp32" or "bf16": the job file's names.
const char* PrecisionName(Precision precision);

// Whether this CPU multiplies bf16 natively where dtrain's products run (oneDNN): it has
// AVX512_BF16 or AMX-BF16 (cpuid) and oneDNN may use them (DNNL_MAX_CPU_ISA can forbid it).
struct Bf16Support {
  bool native = false;
  std::string how;  // native: "AMX-BF16" or "AVX512_BF16"; else why not, for an error message:
                    // "this CPU lacks AVX512_BF16 and AMX-BF16", or what caps oneDNN below them
};
Bf16Support NativeBf16();

// Why bf16 cannot run where `support` is not native, for error messages: "\"bf16\" needs a CPU
// that multiplies bf16 natively (AVX512_BF16 or AMX-BF16), and this CPU lacks ...".
std::string Bf16Refusal(const Bf16Support& support);

}  // namespace dtrain::math
