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
