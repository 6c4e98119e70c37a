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
#   dtrain    : dtrain run of a sparse logistic regression (Adagrad at 0.13, cosine to 0.02,
#               batches of 16, 3 passes),
#               dtrain export, dtrain eval --json on test.svm (run_dtrain below); then the ratio dtrain /
#               liblinear samples/s, both counted as training rows / seconds to a finished model.
#
# Usage: bench/sparse-clicks/run.sh [BUILD_DIR] [--rows N] [--features F] [--quick]
#   defaults: build, 1000000 training rows, 10000000 features, 40 features drawn per row,
#   100000 test rows; --quick: 100000 rows, 1000000 features, 10000 test rows (--rows and
#   --features still override it). Needs dtrain and the targets bench_click_data
#   and bench_score_predictions, and liblinear-tools. On 2 cores: --quick under a minute; the full
#   size about 5 minutes, with about 290 MB of text in a temporary directory and liblinear's peak
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
# liblinear-tools and time are bench-only: as root this script installs them with apt-get.
if [ ! -x /usr/bin/liblinear-train ] || [ ! -x /usr/bin/time ]; then
  [ "$(id -u)" = 0 ] || { echo "install liblinear-tools and time (apt-get install liblinear-tools time)" >&2; exit 1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q liblinear-tools time >/dev/null
fi

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

# dtrain: `dtrain run` of a sparse logistic regression (the same model as liblinear's; Adagrad at
# 0.13 with a cosine decay to 0.02, batches of 16, $dtrain_epochs passes: the best of a sweep on the full
# data, bench/README.md), then `dtrain export` and `dtrain eval --json` of the exported model on
# test.svm: the path a user takes, reading the text file included.
dtrain_epochs=3
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
batch_size = 16
log_every = 500
[optimizer]
type = "adagrad"
lr = 0.13
schedule = "cosine"
min_lr = 0.02
JOB
  /usr/bin/time -v -o "$work/dtrain.time" "$build/cmd/dtrain" run "$work/dtrain.toml" \
    --db "$work/dtrain.db" >/dev/null
  "$build/cmd/dtrain" export 1 --db "$work/dtrain.db" -o "$work/dtrain.dtm" >/dev/null
  "$build/cmd/dtrain" eval "$work/dtrain.dtm" --data "$work/data/test.svm" --json |
    python3 -c 'import json, sys; e = json.load(sys.stdin)
print("log_loss: %.4f" % e["loss"]); print("auc: %.4f" % e["auc"])' >"$work/dtrain.scores"
  rm -f "$work/dtrain.db" "$work/dtrain.dtm"
}

# The same dtrain job in mode "single" (the file read whole, and streamed: data.stream, blocks of
# 16 MiB) and on parameter servers (2 shards): Downpour (cluster.mode = "async") with 1, 2 and 4
# replicas, and sync (allreduce = "ps") with 2 and 4. For each, the wall time of `dtrain run`
# (reading included), samples/s over it (rows x passes / seconds), the largest peak RSS of any of
# its processes, the bytes each example moved to and from the shards (measured: bytes_sent +
# bytes_received over every step, headers included) against non-zeros x 8 bytes pushed and again
# pulled, and the test AUC.
run_scaling() {
  echo
  echo "| dtrain | processes | seconds | samples/s | largest peak RSS MiB | bytes/example moved | nnz x 8 x 2 | test AUC |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
  local nnz
  nnz=$(field nnz_per_row "$planted")
  for setup in "single 1" "single 1 stream" "async 1" "async 2" "async 4" "sync 2" "sync 4"; do
    read -r mode workers stream <<<"$setup"
    local streamed=false
    [ -n "$stream" ] && streamed=true
    rm -f "$work/scale.db"
    local start end
    start=$(date +%s.%N)
    "$build/cmd/dtrain" run "$work/dtrain.toml" --db "$work/scale.db" --json \
      --set "cluster.mode=$mode" --set "cluster.workers=$workers" --set cluster.servers=2 \
      --set cluster.allreduce=ps --set "data.stream=$streamed" \
      --set data.stream_block_mib=16 --set "data.test=$work/data/test.svm" >"$work/scale.json"
    end=$(date +%s.%N)
    "$build/cmd/dtrain" metrics 1 --db "$work/scale.db" --format json |
      python3 -c '
import json, sys
rows, epochs, nnz, seconds = (float(a) for a in sys.argv[1:5])
mode, workers, stream = sys.argv[5:8]
points = json.load(sys.stdin)
summary = json.load(open(sys.argv[8]))
peak = max(p["value"] for p in points if p["name"] == "peak_rss_bytes") / 2**20
moved = sum(p["value"] for p in points if p["name"] in ("bytes_sent", "bytes_received"))
processes = int(workers) + (0 if mode == "single" else 2)
per_example = "%.1f" % (moved / (rows * epochs)) if moved > 0 else "0 (one process)"
print("| %s %s%s | %d | %.2f | %.0f | %.0f | %s | %.1f | %.4f |" % (mode, workers,
      " streamed" if stream else "", processes, seconds, rows * epochs / seconds, peak,
      per_example, nnz * 16, summary["metrics"]["auc"]))
' "$rows" "$dtrain_epochs" "$nnz" "$(echo "$end - $start" | bc -l)" "$mode" "$workers" \
        "$stream" "$work/scale.json"
  done
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
run_scaling
