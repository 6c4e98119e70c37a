# Sourced by the benchmarks that set dtrain beside PyTorch (after they set $dtrain): both sides
# of a ratio run the same OpenBLAS kernels. dtrain picks the CPU's best set where OpenBLAS's own
# detection falls short, PyTorch's OpenBLAS does not, so on such a CPU PyTorch would run slower
# kernels than dtrain; pinning OPENBLAS_CORETYPE to dtrain's choice (`dtrain version --json`,
# "blas") gives both the same. A set OPENBLAS_CORETYPE is kept: dtrain reports it back. Prints
# the CPU model, the kernels and the library dtrain's matrix products run on.
OPENBLAS_CORETYPE=$("$dtrain" version --json | sed -E 's/.*"blas":"([^"]*)".*/\1/')
export OPENBLAS_CORETYPE
echo "CPU: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "OpenBLAS kernels for dtrain and PyTorch alike: $OPENBLAS_CORETYPE"
# dtrain's matrix products: oneDNN's sgemm on an AVX-512 CPU, else OpenBLAS's, or what DTRAIN_GEMM
# says (man/dtrain.1); dtrain version names the choice.
echo "dtrain's $("$dtrain" version | grep '^matrix products')"
