#!/usr/bin/env bash
# `softib topology` run as a process: generate (fat tree, torus, default, presets), write
# to stdout and to -o FILE, check files back (counts), and bad command lines and bad files,
# which must give one "softib: error:" line and exit 2 (command line) or 1 (invalid file).
# Usage: softib_topology_cli_test.sh /path/to/softib
set -u

softib=${1:?usage: $0 /path/to/softib}
work=$(mktemp -d "${TMPDIR:-/tmp}/softib-topo-cli-XXXXXX")
trap 'rm -rf "$work"' EXIT
failures=0
checks=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

run() {
  last_cmd="softib $*"
  "$softib" "$@" >"$work/out" 2>"$work/err"
  status=$?
}

expect_ok() {
  run "$@"
  checks=$((checks + 1))
  [ "$status" -eq 0 ] || fail "exit $status (expected 0): $last_cmd: $(cat "$work/err")"
}

# expect_out TEXT: the last stdout is exactly TEXT (one line).
expect_out() {
  checks=$((checks + 1))
  [ "$(cat "$work/out")" = "$1" ] || fail "output of $last_cmd is '$(cat "$work/out")', expected '$1'"
}

# expect_status CODE MESSAGE ARGS...: exit CODE and exactly one stderr line with MESSAGE.
expect_status() {
  local code=$1 message=$2
  shift 2
  run "$@"
  checks=$((checks + 1))
  [ "$status" -eq "$code" ] || fail "exit $status (expected $code): $last_cmd"
  [ "$(wc -l <"$work/err")" -eq 1 ] || fail "expected one stderr line: $last_cmd: $(cat "$work/err")"
  grep -q '^softib: error: ' "$work/err" || fail "stderr not 'softib: error: ...': $last_cmd"
  grep -qF -- "$message" "$work/err" || fail "stderr lacks '$message': $last_cmd: $(cat "$work/err")"
}

# ---- generate, write, check back.
expect_ok topology gen fat-tree --leaves 4 --hosts-per-leaf 3 --spines 2 --uplinks 2 -o "$work/ft.net"
expect_ok topology check "$work/ft.net"
expect_out "$work/ft.net: 6 switches, 12 CAs, 0 routers, 28 links"

expect_ok topology gen fat-tree --levels 3 --pods 2 --leaves 4 --hosts-per-leaf 2 \
  --aggs-per-pod 2 --spines 4 --radix 8 --speed EDR --width 12x -o "$work/ft3.net"
expect_ok topology check "$work/ft3.net"
expect_out "$work/ft3.net: 12 switches, 8 CAs, 0 routers, 24 links"
checks=$((checks + 1))
grep -q '12xEDR$' "$work/ft3.net" || fail "ft3.net has no 12xEDR links"

expect_ok topology gen torus --x 3 --y 4 --hosts 2 -o "$work/torus.net"
expect_ok topology check "$work/torus.net"
expect_out "$work/torus.net: 12 switches, 24 CAs, 0 routers, 48 links"

# stdout and -o give the same bytes.
expect_ok topology default
cp "$work/out" "$work/default.stdout"
expect_ok topology default -o "$work/default.net"
checks=$((checks + 1))
cmp -s "$work/default.stdout" "$work/default.net" || fail "default: stdout and -o differ"
expect_ok topology check "$work/default.net"
expect_out "$work/default.net: 3 switches, 4 CAs, 0 routers, 8 links"

expect_ok topology preset ft36 -o "$work/ft36.net"
expect_ok topology check "$work/ft36.net"
expect_out "$work/ft36.net: 36 switches, 576 CAs, 0 routers, 864 links"
expect_ok topology preset ft92 -o "$work/ft92.net"
expect_ok topology check "$work/ft92.net"
expect_out "$work/ft92.net: 92 switches, 1920 CAs, 0 routers, 2220 links"

# ---- bad command lines: exit 2.
expect_status 2 "--hosts-per-leaf is required" topology gen fat-tree --leaves 2 --spines 1
expect_status 2 "a leaf needs 41 ports but switches have 36" \
  topology gen fat-tree --leaves 2 --hosts-per-leaf 40 --spines 1
expect_status 2 "--pods and --aggs-per-pod need --levels 3" \
  topology gen fat-tree --leaves 2 --hosts-per-leaf 2 --spines 1 --pods 2
expect_status 2 "--uplinks applies to --levels 2" \
  topology gen fat-tree --levels 3 --leaves 2 --hosts-per-leaf 2 --spines 1 --uplinks 2
expect_status 2 "leaves (3) must divide evenly into 2 pods" \
  topology gen fat-tree --levels 3 --pods 2 --leaves 3 --hosts-per-leaf 2 --spines 1
expect_status 2 "--levels" topology gen fat-tree --levels 4 --leaves 2 --hosts-per-leaf 2 --spines 1
expect_status 2 "--speed XDR" topology gen torus --x 2 --y 2 --hosts 1 --speed XDR
expect_status 2 "--width 3x" topology gen torus --x 2 --y 2 --hosts 1 --width 3x
expect_status 2 "--radix" topology gen torus --x 2 --y 2 --hosts 1 --radix 300
expect_status 2 "torus dimensions must be at least 1" topology gen torus --x 0 --y 2 --hosts 1
expect_status 2 "unknown preset 'ft37' (known: default, ft36, ft92, ft-k36)" topology preset ft37
expect_status 2 "--leaves" topology gen fat-tree --leaves -3 --hosts-per-leaf 2 --spines 1
expect_status 2 "cannot create" topology default -o "$work/no/such/dir.net"
expect_status 2 "" topology
expect_status 2 "" topology gen

# ---- invalid files: exit 1 with file:line: message.
printf 'Switch 4 "S-1"\n[5] "H-2"[1]\n' >"$work/bad.net"
expect_status 1 "$work/bad.net:2: port 5 out of range: S-1 has 4 ports" topology check "$work/bad.net"
expect_status 1 "$work/missing.net: cannot open" topology check "$work/missing.net"
expect_status 1 "no nodes" topology check /dev/null

if [ "$failures" -ne 0 ]; then
  echo "softib topology CLI: $failures of $checks checks failed" >&2
  exit 1
fi
echo "softib topology CLI: all $checks checks passed"
