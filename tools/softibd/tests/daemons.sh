# Sourced by scripts that run softibd daemons (two_daemons.sh, bench/tunnel_vs_local.sh):
# a private work directory and the daemons' pids, both cleaned up at exit; start_daemon
# waits until a daemon is ready; wait_port waits for a host port's state. Needs $softibd;
# sets $work.
set -euo pipefail
# "${tied[@]}": the daemons and clients die with this shell, however it ends.
source "$(dirname "${BASH_SOURCE[0]}")/../../../tests/support/tied.sh"
work=$(mktemp -d /tmp/softib_daemons.XXXXXX)
pids=()
stop_daemons() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  pids=()
}
cleanup() {
  stop_daemons
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# start_daemon LABEL ARGS...: softibd ARGS, its output in $work/LABEL.log, ready on return.
start_daemon() {
  local label=$1
  shift
  rm -f "$work/ready"
  mkfifo "$work/ready"
  "${tied[@]}" "$softibd" "$@" --ready-fd 3 3>"$work/ready" >"$work/$label.log" 2>&1 &
  pids+=($!)
  timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd $label not ready: $(cat "$work/$label.log")"
}

# wait_port IBSIM_NAME HOST STATE [PHYS]: until port 1 of HOST, asked at the host through an
# ibsim client of daemon IBSIM_NAME (the port's own SMA), has LinkState STATE (and
# PhysLinkState PHYS); bounded.
wait_port() {
  local out=
  for _ in $(seq 100); do
    # umad2sim writes its fake sysfs under the current directory.
    out=$(cd "$work" && env -u LD_PRELOAD SIM_HOST="$2" IBSIM_SOCKNAME="$1" timeout 20 ibsim-run \
      smpquery -D portinfo 0 2>"$work/err") || fail "smpquery at $2: $(cat "$work/err")"
    grep -q "^LinkState:\.*$3\$" <<<"$out" && grep -q "^PhysLinkState:\.*${4:-.*}\$" <<<"$out" && return 0
    sleep 0.1
  done
  fail "$2 port 1 not $3 ${4:-}: $out"
}
