#!/usr/bin/env bash
# The README's first command, scripts/run-example, on the build under test (BUILD_DIR = $1): its
# setup says one line per phase and nothing of apt's or the compiler's, then the Fashion-MNIST
# job (one epoch here) trains through a real dtraind, succeeds, and its exported model is
# evaluated. Exit status 0 when all of that holds.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:?usage: tests/run_example_test.sh BUILD_DIR}
status=0
out=$(BUILD_DIR="$build" scripts/run-example --set train.epochs=1 2>&1) || status=$?
fail() { echo "run_example_test: $1"; echo "--- its output:"; echo "$out"; exit 1; }
[ "$status" -eq 0 ] || fail "scripts/run-example exited with $status"
setup=$(printf '%s\n' "$out" | sed -n '1,/^(full setup output: /p')
phases=$(printf '%s\n' "$setup" | grep -c ' \.\.\. done ([0-9]* s)$' || true)
[ "$phases" -eq 3 ] || fail "expected 3 setup phase lines, found $phases"
[ "$(printf '%s\n' "$setup" | wc -l)" -eq 4 ] || fail "the setup printed more than its phases"
printf '%s\n' "$out" | grep -q '^  state     succeeded' || fail "the job did not succeed"
printf '%s\n' "$out" | tail -n 1 | grep -q 'accuracy' || fail "the exported model was not evaluated"
echo "run_example_test: setup in 3 lines, the job succeeded, the model evaluated:"
printf '%s\n' "$out" | tail -n 1
