# Sourced by the benchmarks that set dtrain beside PyTorch (after they set $dtrain): both sides
# of a ratio run the same OpenBLAS kernels. dtrain picks the CPU's best set where OpenBLAS's own
# detection falls short, PyTorch's OpenBLAS does not, so on such a CPU PyTorch would run slower
# kernels than dtrain; pinning OPENBLAS_CORETYPE to dtrain's choice (`dtrain version --json`,
# "blas") gives both the same. A set OPENBLAS_CORETYPE is kept: dtrain reports it back.
OPENBLAS_CORETYPE=$("$dtrain" version --json | sed -E 's/.*"blas":"([^"]*)".*/\1/')
export OPENBLAS_CORETYPE
echo "OpenBLAS kernels for dtrain and PyTorch alike: $OPENBLAS_CORETYPE"
