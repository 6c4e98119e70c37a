# Sourced by the benchmarks that set dtrain beside PyTorch (after bench/figures.sh, and after they
# set $python): the thread settings PyTorch runs with, so that each ratio meets PyTorch's best on
# the same cores.
# torch.set_num_threads sizes only PyTorch's own OpenMP pool; its GEMMs run in Debian's OpenBLAS,
# which has a pool of its own (see bench/pytorch_timing.py, use_threads). A setting is a
# bench/pytorch_*.py THREADS argument, "p" at the end adding OMP_WAIT_POLICY=PASSIVE:
#   1    one thread in all (the 1-core figure)
#   2    two of its own, OpenBLAS on two
#   1/2  one of its own, OpenBLAS on two: what torch.set_num_threads(1) gives by default
#   2p   as 2, its OpenMP threads asleep while OpenBLAS's work, instead of spinning on the same
#        cores (spinning, "2" ran the MLP at 7-9k samples/s against "1"'s 23k on a 2-vCPU Zen 3)
torch_two_core_settings=(2 1/2 2p)
torch_settings=(1 "${torch_two_core_settings[@]}")

# SETTING SCRIPT ARGS...: runs bench/pytorch_*.py SCRIPT with that thread setting, cut off after
# $torch_limit seconds when that is set.
run_pytorch() {
  local setting=$1 script=$2 command
  shift 2
  command=("$python" "$script" "${setting%p}" "$@")
  [[ $setting == *p ]] && command=(env OMP_WAIT_POLICY=PASSIVE "${command[@]}")
  [ -n "${torch_limit:-}" ] && command=(timeout "$torch_limit" "${command[@]}")
  "${command[@]}"
}

# SETTING: a file name for that setting's figures ("/" is not allowed in one).
torch_file() { echo "torch-${1//\//_}"; }

# DIR BIGGER_IS_BETTER(1|0) SETTING...: best_of (bench/figures.sh) over those settings' files in
# DIR.
torch_best() {
  local dir=$1 bigger=$2 files=() setting
  shift 2
  for setting in "$@"; do files+=("$dir/$(torch_file "$setting")"); done
  best_of "$bigger" "${files[@]}"
}
