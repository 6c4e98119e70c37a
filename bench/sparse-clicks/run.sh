#!/usr/bin/env bash
# Sparse click prediction, dtrain beside Debian's liblinear (liblinear-tools), on the same files:
# synthetic click logs with a planted model (bench_click_data: data::MakeClicks, power-law binary
# features, the first N rows for training, the next T for testing), L2-regularised logistic
# regression trained on train.svm and scored on test.svm. Prints one table row per tool: train
# seconds (wall, from the launch of the trainer, reading the text file included), samples/s
# (training rows / train seconds), peak RSS, test log loss and AUC of P(click); and the planted
# model's own test log loss and AUC, the best any model can do on average. Asserts nothing.
#
#   liblinear : liblinear-train -s 0 (L2-regularised logistic regression, primal trust-region
#               Newton) -B 1 (a bias feature), then liblinear-predict -b 1 and
#               bench_score_predictions on its probabilities.
#   dtrain    : dtrain run of a sparse logistic regression (Adagrad, 2 passes), dtrain export,
#               dtrain eval --json on test.svm (run_dtrain below); then the ratio dtrain /
#               liblinear samples/s, both counted as training rows / seconds to a finished model.
#
# Usage: bench/sparse-clicks/run.sh [BUILD_DIR] [--rows N] [--features F] [--quick]
#   defaults: build, 1000000 training rows, 10000000 features, 40 features drawn per row,
#   100000 test rows; --quick: 100000 rows, 1000000 features, 10000 test rows (--rows and
#   --features still override it). Needs dtrain and the targets bench_click_data
#   and bench_score_predictions, and liblinear-tools. On 2 cores: --quick about 6 seconds; the full
#   size about 1 minute, with about 290 MB of text in a temporary directory and liblinear's peak
#   RSS about 1.4 GB.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=build
rows=1000000
features=10000000
nonzeros=40
test_rows=100000
seed=3
quick=0
rows_set=
features_set=
while [ $# -gt 0 ]; do
  case $1 in
    --rows) rows_set=${2:?--rows needs a number}; shift 2 ;;
    --features) features_set=${2:?--features needs a number}; shift 2 ;;
    --quick) quick=1; shift ;;
    -*) echo "usage: $0 [BUILD_DIR] [--rows N] [--features F] [--quick]" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
if [ "$quick" = 1 ]; then
  rows=100000
  features=1000000
  test_rows=10000
fi
rows=${rows_set:-$rows}
features=${features_set:-$features}

# liblinear minimises 1/2 |w|^2 + C * sum of the rows' log losses: the posterior mode under the
# prior w ~ N(0, C). The planted weights are N(0, 0.25^2) (ClickOptions::weight_scale), so
# C = 0.0625 is the regularisation the data was made for; on the --quick data it also gave the
# best test log loss and AUC of C in {0.03, 0.0625, 0.125, 0.25, 1, 4}. The same objective as a
# mean loss plus weight_decay / 2 * |w|^2 has weight_decay = 1 / (C * rows).
liblinear_c=0.0625

data_tool=$build/bench/bench_click_data
score_tool=$build/bench/bench_score_predictions
if [ ! -x "$data_tool" ] || [ ! -x "$score_tool" ] || [ ! -x "$build/cmd/dtrain" ]; then
  echo "build first: cmake --build $build --target dtrain bench_click_data bench_score_predictions" >&2
  exit 1
fi
for tool in /usr/bin/liblinear-train /usr/bin/liblinear-predict /usr/bin/time; do
  [ -x "$tool" ] || { echo "$tool is missing: apt-get install liblinear-tools time" >&2; exit 1; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# `key: value` of a file of such lines.
field() { awk -F': ' -v key="$1" '$1 == key { print $2 }' "$2"; }
# Wall seconds and peak RSS (MiB) from the output of /usr/bin/time -v.
wall_seconds() {
  awk -F': ' '/Elapsed \(wall clock\) time/ {
    n = split($2, part, ":"); s = 0
    for (i = 1; i <= n; ++i) s = s * 60 + part[i]
    print s }' "$1"
}
peak_mib() { awk -F': ' '/Maximum resident set size/ { printf "%.0f", $2 / 1024 }' "$1"; }

echo "Generating $rows + $test_rows rows, $features features, $nonzeros drawn per row, seed $seed"
"$data_tool" --rows "$rows" --test-rows "$test_rows" --features "$features" \
  --nonzeros "$nonzeros" --seed "$seed" --out "$work/data" >/dev/null
planted=$work/data/planted.txt
printf 'nnz per row %s, click rate %s (train) / %s (test), generated in %s s, written in %s s; ' \
  "$(field nnz_per_row "$planted")" "$(field click_rate_train "$planted")" \
  "$(field click_rate_test "$planted")" "$(field generate_seconds "$planted")" \
  "$(field write_seconds "$planted")"
printf 'train.svm %s MiB, test.svm %s MiB\n' "$(field train_svm_mib "$planted")" \
  "$(field test_svm_mib "$planted")"
echo "$(nproc) cores; liblinear-tools $(dpkg-query -W -f '${Version}' liblinear-tools 2>/dev/null ||
  echo '(version unknown)')"

# Each tool's run leaves $work/TOOL.time (the output of /usr/bin/time -v around its training,
# reading the training file included) and $work/TOOL.scores (bench_score_predictions' output on
# its test predictions: log_loss and auc lines); the table shows a row for every tool that did.
run_liblinear() {
  /usr/bin/time -v -o "$work/liblinear.time" /usr/bin/liblinear-train -s 0 -c "$liblinear_c" \
    -B 1 -q "$work/data/train.svm" "$work/liblinear.model"
  /usr/bin/liblinear-predict -b 1 "$work/data/test.svm" "$work/liblinear.model" \
    "$work/liblinear.pred" >/dev/null
  "$score_tool" "$work/data/test.svm" "$work/liblinear.pred" >"$work/liblinear.scores"
  rm -f "$work/liblinear.pred" "$work/liblinear.model"
}

# dtrain: `dtrain run` of a sparse logistic regression (the same model as liblinear's; Adagrad,
# $dtrain_epochs passes), then `dtrain export` and `dtrain eval --json` of the exported model on
# test.svm: the path a user takes, reading the text file included.
dtrain_epochs=2
run_dtrain() {
  cat >"$work/dtrain.toml" <<JOB
name = "clicks"
[data]
format = "libsvm"
sparse = true
train = "$work/data/train.svm"
[model]
type = "logistic"
[train]
epochs = $dtrain_epochs
batch_size = 256
log_every = 200
[optimizer]
type = "adagrad"
lr = 0.1
JOB
  /usr/bin/time -v -o "$work/dtrain.time" "$build/cmd/dtrain" run "$work/dtrain.toml" \
    --db "$work/dtrain.db" >/dev/null
  "$build/cmd/dtrain" export 1 --db "$work/dtrain.db" -o "$work/dtrain.dtm" >/dev/null
  "$build/cmd/dtrain" eval "$work/dtrain.dtm" --data "$work/data/test.svm" --json |
    python3 -c 'import json, sys; e = json.load(sys.stdin)
print("log_loss: %.4f" % e["loss"]); print("auc: %.4f" % e["auc"])' >"$work/dtrain.scores"
  rm -f "$work/dtrain.db" "$work/dtrain.dtm"
}

run_liblinear
run_dtrain

echo
echo "| tool | train seconds | samples/s | peak RSS MiB | test log loss | test AUC |"
echo "|---|---:|---:|---:|---:|---:|"
for tool in liblinear dtrain; do
  if [ ! -f "$work/$tool.time" ] || [ ! -f "$work/$tool.scores" ]; then continue; fi
  seconds=$(wall_seconds "$work/$tool.time")
  printf '| %s | %.2f | %.0f | %s | %s | %s |\n' "$tool" "$seconds" \
    "$(echo "$rows / $seconds" | bc -l)" "$(peak_mib "$work/$tool.time")" \
    "$(field log_loss "$work/$tool.scores")" "$(field auc "$work/$tool.scores")"
  echo "$rows / $seconds" | bc -l >"$work/$tool.rate"
done
printf '| planted model (the best possible) | | | | %s | %s |\n' \
  "$(field planted_test_log_loss "$planted")" "$(field planted_test_auc "$planted")"
if [ -f "$work/dtrain.rate" ] && [ -f "$work/liblinear.rate" ]; then
  printf '\ndtrain / liblinear samples/s: %.2f\n' \
    "$(echo "$(cat "$work/dtrain.rate") / $(cat "$work/liblinear.rate")" | bc -l)"
fi
