#!/usr/bin/env bash
# The Debian package as an administrator meets it (root only; it installs and purges the package
# on this machine):
#   - lintian reports no error;
#   - dpkg -i installs every file, creates the group dtrain, and starts nothing;
#   - systemd-analyze verify accepts the installed unit, and systemctl enable links it;
#   - dtraind started as the unit starts it — root with only the unit's capability bounding set,
#     its Group=, UMask=, NoNewPrivileges=, state and runtime directories — runs a job that a
#     member of dtrain submits through the system socket, as that member;
#   - dpkg -r keeps /etc/dtrain/dtraind.toml, and dpkg -P leaves nothing behind: the file tree
#     and the groups are as they were before the install.
# systemd itself cannot run here (no systemd as PID 1), so `systemctl enable --now` is split into
# the link systemctl makes and the start done by hand with the unit's settings.
# Usage: tests/package_test.sh PATH/TO/dtrain_VERSION_ARCH.deb
set -euo pipefail
deb=$(realpath "$1")
if [ "$(id -u)" != 0 ]; then
  echo "package test: skipped (it needs root to install the package)"
  exit 0
fi
unit=/usr/lib/systemd/system/dtraind.service
user=dtrain-pkg-test
work=$(mktemp -d)
daemon=""
cleanup() {
  [ -n "$daemon" ] && kill -9 "$daemon" 2>/dev/null || true
  userdel "$user" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "package test: FAILED: $*" >&2; exit 1; }
step() { echo "package test: $*"; }

# What an install could leave behind: the file tree outside dpkg's and apt's own records and
# caches and the logs, and the groups.
snapshot() {
  { find /etc /usr /var/lib /run/dtrain /var/lib/dtrain -xdev \
      \( -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/lib/ucf -o -path /etc/ld.so.cache \) \
      -prune -o -print 2>/dev/null || true; } | sort
  getent group | cut -d: -f1 | sort
}

step "lintian"
lintian --fail-on error "$deb" 2>&1 | grep -v '^running with root privileges' || true
lintian --fail-on error "$deb" >/dev/null 2>&1 || fail "lintian reports errors"

dpkg -P dtrain >/dev/null 2>&1 || true  # a leftover of an interrupted run
snapshot >"$work/before"

step "dpkg -i"
dpkg -i "$deb" >/dev/null
for f in /usr/bin/dtrain /usr/sbin/dtraind "$unit" /etc/dtrain/dtraind.toml \
         /usr/lib/sysctl.d/60-dtrain.conf /usr/share/man/man1/dtrain.1.gz \
         /usr/share/man/man5/dtrain-job.toml.5.gz /usr/share/man/man5/dtrain-sweep.toml.5.gz \
         /usr/share/man/man8/dtraind.8.gz \
         /usr/share/bash-completion/completions/dtrain /usr/share/zsh/vendor-completions/_dtrain \
         /usr/share/fish/vendor_completions.d/dtrain.fish /usr/share/doc/dtrain/copyright; do
  [ -e "$f" ] || fail "missing after dpkg -i: $f"
done
getent group dtrain >/dev/null || fail "dpkg -i created no group dtrain"
grep -qx /etc/dtrain/dtraind.toml /var/lib/dpkg/info/dtrain.conffiles || fail "no conffile"
pgrep -f '^/usr/sbin/dtraind' >/dev/null && fail "installing started dtraind"
/usr/bin/dtrain --version | grep -q '^dtrain ' || fail "dtrain --version"
man -w dtraind >/dev/null || fail "man dtraind finds no page"

step "systemd-analyze verify, systemctl enable"
systemd-analyze verify "$unit" || fail "systemd-analyze verify refuses $unit"
systemctl enable dtraind.service >/dev/null 2>&1 || fail "systemctl enable dtraind"
[ -L /etc/systemd/system/multi-user.target.wants/dtraind.service ] || fail "enable made no link"

step "dtraind as the unit starts it"
setting() { sed -n "s/^$1=//p" "$unit"; }
caps=$(setting CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
group=$(setting Group)
umask_value=$(setting UMask)
exec_start=$(setting ExecStart)
[ -n "$caps" ] && [ "$group" = dtrain ] && [ -n "$exec_start" ] || fail "unexpected unit: $unit"
install -d -m 0755 /run/dtrain
install -d -m 0700 -g "$group" /var/lib/dtrain
(
  umask "$umask_value"
  exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
    RUNTIME_DIRECTORY=/run/dtrain STATE_DIRECTORY=/var/lib/dtrain \
    setpriv --regid="$group" --clear-groups --no-new-privs --bounding-set="-all,$caps" \
    --inh-caps=-all -- $exec_start
) >"$work/dtraind.log" 2>&1 &
daemon=$!
for _ in $(seq 300); do [ -S /run/dtrain/dtraind.sock ] && break; sleep 0.1; done
[ -S /run/dtrain/dtraind.sock ] || { cat "$work/dtraind.log"; fail "dtraind did not start"; }
[ "$(stat -c %G:%a /run/dtrain/dtraind.sock)" = dtrain:660 ] || fail "socket: $(stat -c %G:%a /run/dtrain/dtraind.sock)"
[ "$(stat -c %a /var/lib/dtrain/dtrain.db)" = 600 ] || fail "the store is readable by others"

useradd --system --no-create-home --shell /usr/sbin/nologin --groups dtrain "$user"
cat >"$work/job.toml" <<'JOB'
name = "packaged"
[data]
format = "synthetic"
rows = 512
[train]
epochs = 1
[cluster]
workers = 2
mode = "sync"
JOB
chmod 755 "$work"
chmod 644 "$work/job.toml"
out=$(cd / && setpriv --reuid="$user" --regid="$user" --init-groups -- \
        /usr/bin/dtrain submit "$work/job.toml" --json 2>"$work/submit.err") ||
  { cat "$work/submit.err" "$work/dtraind.log"; fail "submit"; }
echo "$out" | grep -q '"state":"succeeded"' || fail "the job did not succeed: $out"
echo "$out" | grep -q "\"owner\":$(id -u "$user")" || fail "the job is not its submitter's: $out"
kill -TERM "$daemon"
wait "$daemon" || fail "dtraind did not stop cleanly: $(cat "$work/dtraind.log")"
daemon=""
userdel "$user"
systemctl disable dtraind.service >/dev/null 2>&1 || fail "systemctl disable dtraind"

step "dpkg -r, dpkg -P"
dpkg -r dtrain >/dev/null
[ ! -e /usr/sbin/dtraind ] || fail "dpkg -r left /usr/sbin/dtraind"
[ -e /etc/dtrain/dtraind.toml ] || fail "dpkg -r removed the configuration"
dpkg -P dtrain >/dev/null
snapshot >"$work/after"
if ! diff "$work/before" "$work/after" >"$work/diff"; then
  cat "$work/diff"
  fail "dpkg -P left something behind (above)"
fi
echo "package test: installed, served a job as its submitter, removed and purged cleanly"
