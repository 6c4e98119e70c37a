#!/usr/bin/env bash
# cmake --install puts every file where it belongs: binaries that run, the unit (naming the
# installed dtraind), the man pages (which man can render), the completions, the default
# configuration and the sysctl drop-in. Usage: install_test.sh BUILD_DIR
set -euo pipefail
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
files=(bin/dtrain sbin/dtraind lib/systemd/system/dtraind.service share/man/man1/dtrain.1.gz
       share/man/man5/dtrain-job.toml.5.gz share/man/man5/dtrain-sweep.toml.5.gz
       share/man/man8/dtraind.8.gz
       share/bash-completion/completions/dtrain share/zsh/vendor-completions/_dtrain
       share/fish/vendor_completions.d/dtrain.fish etc/dtrain/dtraind.toml
       lib/sysctl.d/60-dtrain.conf share/doc/dtrain/copyright)
for f in "${files[@]}"; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
"$prefix/bin/dtrain" --version | grep -q '^dtrain '
"$prefix/sbin/dtraind" --version | grep -q '^dtraind '
unit="$prefix/lib/systemd/system/dtraind.service"
grep -q '^Type=notify' "$unit"
# The unit runs the dtraind of the build's prefix (configured, not hard-coded).
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit")
installed_prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
[ "$exec_start" = "$installed_prefix/sbin/dtraind" ] || { echo "ExecStart=$exec_start"; exit 1; }
man -l "$prefix/share/man/man8/dtraind.8.gz" 2>/dev/null | grep -q 'Who may do what'
bash -c "source '$prefix/share/bash-completion/completions/dtrain' && complete -p dtrain" >/dev/null
echo "installed and checked ${#files[@]} files under a temporary prefix"
