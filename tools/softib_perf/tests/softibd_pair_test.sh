#!/usr/bin/env bash
# softib_perf server and client processes against a softibd started here (private mkdtemp
# run directory, stopped by pid, removed on exit).
#
#   softibd_pair_test.sh SOFTIBD SOFTIB_PERF control
#     What works without the user speed path: a server refuses a client of another test
#     (both exit 1 with the reason), a client with no server gives up (exit 1), a run
#     against a directory where no node listens fails clearly (exit 1).
#   softibd_pair_test.sh SOFTIBD SOFTIB_PERF data
#     Every test end to end between two user processes with --validate: exit codes 0, the
#     client's JSON rows, and the number of payloads / targets / atomic results checked.
set -euo pipefail
softibd=$1
perf=$2
mode=$3

source "$(dirname "$0")/../../../tests/support/tied.sh"  # "${tied[@]}": children die with us
work=$(mktemp -d /tmp/softib_perf_it.XXXXXX)
daemon_pid=""
server_pid=""
cleanup() {
  [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  [[ -n "$daemon_pid" ]] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$work/run" --ready-fd 3 3>"$work/ready" >"$work/softibd.log" 2>&1 &
daemon_pid=$!
timeout 20 head -n1 "$work/ready" | grep -q ready || fail "softibd not ready: $(cat "$work/softibd.log")"

run_dir=$work/run
# run_pair SERVER_ARGS -- CLIENT_ARGS: sets server_rc, client_rc, client_out, errors.
run_pair() {
  local server_args=() client_args=()
  while [[ $1 != -- ]]; do server_args+=("$1"); shift; done
  shift
  client_args=("$@")
  local oob="unix:$work/oob.sock"
  "${tied[@]}" "$perf" "${server_args[@]}" --run-dir "$run_dir" --oob "$oob" --timeout 20 \
    >"$work/server.out" 2>"$work/server.err" &
  server_pid=$!
  client_rc=0
  "$perf" "${client_args[@]}" --run-dir "$run_dir" --oob "$oob" --connect --timeout 20 --json \
    >"$work/client.out" 2>"$work/client.err" || client_rc=$?
  server_rc=0
  wait "$server_pid" || server_rc=$?
  server_pid=""
  client_out=$(cat "$work/client.out")
  errors="$(cat "$work/client.err") $(cat "$work/server.err")"
}

json() { /usr/bin/python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))" "$1" "$2"; }

if [[ $mode == control ]]; then
  run_pair write_bw -- read_bw -s 64 -n 10
  [[ $server_rc -eq 1 && $client_rc -eq 1 ]] || fail "mismatched tests: exits $server_rc/$client_rc"
  grep -q "the client asked for read_bw over RC, this server runs write_bw over RC" \
    "$work/server.err" || fail "server's reason: $(cat "$work/server.err")"
  grep -q "the server runs another test or connection type (write_bw over RC)" \
    "$work/client.err" || fail "client's reason: $(cat "$work/client.err")"

  rc=0
  "$perf" send_lat --oob "unix:$work/nobody.sock" --connect --timeout 1 2>"$work/err" || rc=$?
  [[ $rc -eq 1 ]] && grep -q "no server at the out-of-band address" "$work/err" ||
    fail "client without server: exit $rc, $(cat "$work/err")"

  mkdir "$work/empty"
  run_dir=$work/empty
  run_pair send_lat -- send_lat
  [[ $server_rc -eq 1 && $client_rc -eq 1 ]] || fail "no node: exits $server_rc/$client_rc"
  grep -q "is softibd running?" "$work/server.err" || fail "no node: $(cat "$work/server.err")"
  echo "control: ok"
  exit 0
fi

# data: every test, validated.
check() {  # TEST ARGS... ; then the expected validated count as the last argument
  local expected=${*: -1}
  local args=("${@:1:$#-1}")
  run_pair "${args[@]}" -- "${args[@]}" --validate
  [[ $server_rc -eq 0 && $client_rc -eq 0 ]] ||
    fail "${args[*]}: exits server $server_rc client $client_rc: $errors"
  [[ $(json "$client_out" "d['validated_messages']") == "$expected" ]] ||
    fail "${args[*]}: validated $(json "$client_out" "d['validated_messages']"), expected $expected"
  [[ $(json "$client_out" "len(d['results'])") -ge 1 ]] || fail "${args[*]}: no rows"
  echo "ok ${args[*]}: $(json "$client_out" "d['results'][0]")"
}
check send_lat -s 64 -n 50 50
check write_lat -s 4096 -n 50 1
check read_lat -s 4096 -n 50 50
check atomic_lat -n 50 51
check atomic_bw -A CMP_AND_SWAP -n 200 201
check send_bw -s 1024 -n 200 200
check write_bw -a --min-size 4096 --max-size 65536 -n 50 5
check read_bw -s 65536 -n 50 50
# UD from a user process: the send ring names the AV by handle, the CA translates it.
check send_lat -c UD -s 64 -n 50 50
check write_bw -c UC -s 8192 -n 50 1
echo "data: ok"
