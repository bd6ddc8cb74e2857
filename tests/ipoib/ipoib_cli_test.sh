#!/usr/bin/env bash
# `softib ipoib` against a running softibd (label ipoib): the node's control socket is there
# (single node: the run directory; --fabric: each full host's directory), and every bad
# input gets one clear line and exit code 2 (not root, no such node directory, bad P_Key,
# a missing namespace, bad address, --port with --ports, an unknown interface); no daemon:
# exit 1. Nothing here needs the driver.
#   ipoib_cli_test.sh SOFTIBD SOFTIB
set -euo pipefail
softibd=$1
softib=$2
source "$(dirname "$0")/../support/tied.sh"
work=$(mktemp -d /tmp/softib-ipoib-cli.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
start_daemon() {  # LABEL ARGS...
  local label=$1
  shift
  rm -f "$work/ready"
  mkfifo "$work/ready"
  "${tied[@]}" "$softibd" "$@" --ready-fd 3 3>"$work/ready" >"$work/$label.log" 2>&1 &
  pids+=($!)
  timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd $label: $(cat "$work/$label.log")"
}
# expect CODE MESSAGE ARGS...: softib ARGS exits CODE with stderr "softib: error: MESSAGE".
expect() {
  local code=$1 message=$2
  shift 2
  local rc=0
  "$softib" "$@" >"$work/out" 2>"$work/err" || rc=$?
  [[ $rc == "$code" ]] || fail "softib $*: exit $rc, not $code: $(cat "$work/err")"
  [[ "$(cat "$work/err")" == "softib: error: $message" ]] ||
    fail "softib $*: said \"$(cat "$work/err")\", not \"softib: error: $message\""
}

run=$work/run
start_daemon node --run-dir "$run"
[[ -S $run/ipoib.ctl ]] || fail "no $run/ipoib.ctl"
"$softib" ipoib show --run-dir "$run" >"$work/out" || fail "show: $(cat "$work/out")"
[[ ! -s $work/out ]] || fail "show lists interfaces that nobody made: $(cat "$work/out")"
expect 2 "no such node directory $work/nohost (softibd's run directory, or <run-dir>/<host> with --fabric)" \
  ipoib up --run-dir "$work/nohost"
expect 2 "bad --pkey \"0x8000\" (16 bits with a partition number other than 0, e.g. 0x8001; 0xffff: the default partition)" \
  ipoib up --run-dir "$run" --pkey 0x8000
expect 2 "bad --pkey \"0x18001\" (16 bits with a partition number other than 0, e.g. 0x8001; 0xffff: the default partition)" \
  ipoib up --run-dir "$run" --pkey 0x18001
ns=sib-missing-$$
expect 2 "network namespace \"$ns\" does not exist (ip netns add $ns)" \
  ipoib up --run-dir "$run" --netns "$ns"
expect 2 "--addr: \"198.18.0.1\" is not ADDRESS/PREFIX-LENGTH" \
  ipoib up --run-dir "$run" --addr 198.18.0.1
expect 2 "--port excludes --ports" ipoib up --run-dir "$run" --port 1 --ports 1,2
expect 2 "no interface sib-none on node" ipoib down --run-dir "$run" sib-none
expect 2 "no interface sib-none on node" ipoib show --run-dir "$run" sib-none
# As another user: refused before anything is asked.
rc=0
setpriv --reuid 65534 --regid 65534 --clear-groups "$softib" ipoib up --run-dir "$run" \
  2>"$work/err" || rc=$?
[[ $rc == 2 && "$(cat "$work/err")" == "softib: error: softib ipoib up needs root (TAP devices and network namespaces)" ]] ||
  fail "not root: exit $rc: $(cat "$work/err")"
# No daemon: exit 1.
mkdir "$work/empty"
expect 1 "$work/empty/ipoib.ctl: No such file or directory (is softibd running there?)" \
  ipoib show --run-dir "$work/empty"

# --fabric: each full host has its socket; the SM's host (host-0001, light) has no directory.
start_daemon fabric --run-dir "$work/fabric" --fabric default --sm internal
for host in host-0002 host-0003 host-0004; do
  [[ -S $work/fabric/$host/ipoib.ctl ]] || fail "no ipoib.ctl for $host"
  "$softib" ipoib show --run-dir "$work/fabric/$host" >/dev/null || fail "show on $host"
done
expect 2 "no interface ib9 on host-0003" ipoib down --run-dir "$work/fabric/host-0003" ib9
echo PASS
