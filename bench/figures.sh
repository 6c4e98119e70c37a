# Sourced by the bench scripts (from the repository's root): small helpers over figures, one
# figure a line.

# The median of the figures on stdin.
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# FORMAT: the smallest and largest of the figures on stdin, "min-max", each printed with FORMAT.
min_max() { sort -g | awk -v f="$1" 'NR == 1 {lo = $1} {hi = $1} END {printf f "-" f, lo, hi}'; }

# BIGGER_IS_BETTER(1|0) FILE...: prints, line by line, the best of the files' figures (the same
# number of lines in each): e.g. the best setting of each round.
best_of() {
  local bigger=$1
  shift
  paste "$@" | awk -v bigger="$bigger" '{
      best = $1
      for (i = 2; i <= NF; i++) if ((bigger && $i > best) || (!bigger && $i < best)) best = $i
      print best }'
}

# NAME FILE: the value of the JSON field NAME in FILE, a line `dtrain ... --json` printed (a
# number, or a string without its quotes).
field() { sed -E "s/.*\"$1\":(\"[^\"]*\"|[0-9.eE+-]+).*/\1/" "$2" | tr -d '"'; }

# DTRAIN WORK FILE BATCH SHORT LONG [VAR=VALUE...] [-- RUN_ARG...]: the samples/s of a step of
# `DTRAIN run FILE` (BATCH rows a step), from the difference of a SHORT- and a LONG-step run
# (process start, data loading and recording cancel out), with VAR=VALUE in their environment and
# the RUN_ARGs (--set K=V) added; WORK holds the runs' scratch files.
run_samples_per_second() {
  local dtrain=$1 work=$2 file=$3 batch=$4 short=$5 long=$6
  shift 6
  local vars=() steps seconds=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    vars+=("$1")
    shift
  done
  [ $# -gt 0 ] && shift
  for steps in "$short" "$long"; do
    env "${vars[@]}" "$dtrain" run "$file" --json --db "$work/steps-$steps.db" "$@" \
      --set train.epochs=0 --set train.steps="$steps" --set train.eval_every=0 \
      --set checkpoint.every_steps=0 --set optimizer.warmup_steps=10 \
      >"$work/steps.json" 2>"$work/steps.err" || { cat "$work/steps.err" >&2; return 1; }
    rm -f "$work/steps-$steps.db"*
    seconds+=("$(field seconds "$work/steps.json")")
  done
  echo "($long - $short) * $batch / (${seconds[1]} - ${seconds[0]})" | bc -l
}
