# Sourced by scripts that run softibd daemons (two_daemons.sh, bench/tunnel_vs_local.sh):
# a private work directory and the daemons' pids, both cleaned up at exit; start_daemon
# waits until a daemon is ready. Needs $softibd; sets $work.
set -euo pipefail
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
  "$softibd" "$@" --ready-fd 3 3>"$work/ready" >"$work/$label.log" 2>&1 &
  pids+=($!)
  timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd $label not ready: $(cat "$work/$label.log")"
}
