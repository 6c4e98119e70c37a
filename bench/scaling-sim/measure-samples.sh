#!/usr/bin/env bash
# The statistical side of the scaling simulator: how many training samples Fashion-MNIST's MLP
# 784-256-128-10 needs to reach 88 % test accuracy (train.target_accuracy), through `dtrain run`.
#   sync: examples/fashion-mnist-mlp.toml (Adam, lr scaled with the square root of the batch as
#         cluster.lr_scaling = "sqrt" does) at each global batch B: a sync job of n replicas of
#         b rows computes what one worker with batch n*b computes (man/dtrain-job.toml.5), so
#         one worker with that batch stands for it;
#   async: examples/fashion-mnist-async.toml (Downpour, Adagrad on 2 shards) with 1, 2 and 4
#         replicas of 32 rows: all replicas' samples until the first evaluation at 88 %.
# Writes "mode,batch,replicas,samples" rows to OUT (-1: 88 % not reached in 60 epochs).
# Usage: bench/scaling-sim/measure-samples.sh [BUILD_DIR] [OUT] (default: build,
#   bench/scaling-sim/samples.csv). About 10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
out=${2:-bench/scaling-sim/samples.csv}
dtrain=$build/cmd/dtrain
[ -x "$dtrain" ] || { echo "build first: cmake --build $build --target dtrain" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The step of a run that stopped at its target, or -1.
target_step() {
  python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["steps"] if "target" in j.get("reason","") else -1)' "$1"
}
echo "mode,batch,replicas,samples" > "$out"
for batch in 64 128 256 512 1024 2048; do
  lr=$(awk -v b="$batch" 'BEGIN { printf "%.6f", 0.002 * sqrt(b / 128) }')
  eval_every=$(( (6400 + batch - 1) / batch ))  # an evaluation about every 6400 samples
  "$dtrain" run examples/fashion-mnist-mlp.toml --json --db "$work/run.db" --set train.batch_size="$batch" \
    --set optimizer.lr="$lr" --set train.epochs=60 --set optimizer.schedule=constant \
    --set train.target_accuracy=0.88 --set train.eval_every="$eval_every" \
    --set checkpoint.every_steps=0 > "$work/run.json" || true
  steps=$(target_step "$work/run.json")
  echo "sync,$batch,1,$(( steps < 0 ? -1 : steps * batch ))" | tee -a "$out"
done
for replicas in 1 2 4; do
  "$dtrain" run examples/fashion-mnist-async.toml --json --db "$work/run.db" --set cluster.workers="$replicas" \
    --set train.epochs=60 --set train.target_accuracy=0.88 --set train.eval_every=200 \
    --set checkpoint.every_steps=0 > "$work/run.json" || true
  steps=$(target_step "$work/run.json")  # each replica's steps: they stop together
  echo "async,32,$replicas,$(( steps < 0 ? -1 : steps * 32 * replicas ))" | tee -a "$out"
done
