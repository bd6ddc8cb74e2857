#!/usr/bin/env bash
# softib_perf --service-id between user processes on two hosts of a softibd fabric (the
# default fabric: host-0001 and host-0003 behind different leaves), no out-of-band channel:
# the server registers a ServiceRecord and listens on the CM, the client finds it through
# the SA and connects through the CM. The SA is softib-sm's on host-0001 (--sm external: an
# SM above the AL).
#
#   service_id_test.sh SOFTIBD SOFTIB_PERF SOFTIB_SM
# Checks: send_lat and write_bw with --validate (exit codes, the ServiceRecord's GID and the
# path's LIDs in the transcript, the payloads validated); a client with no server (exit 1,
# the reason); a plan the server refuses (REJ CONSUMER_REJECT with the reason, both exit 1).
set -euo pipefail
softibd=$1
perf=$2
sm=$3

source "$(dirname "$0")/../../../tests/support/tied.sh"  # "${tied[@]}": children die with us
work=$(mktemp -d /tmp/softib_perf_cm.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkfifo "$work/ready"
"${tied[@]}" "$softibd" --run-dir "$work/run" --fabric default --sm external --ready-fd 3 \
  3>"$work/ready" >"$work/softibd.log" 2>&1 &
pids+=($!)
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd not ready: $(cat "$work/softibd.log")"
"${tied[@]}" /usr/bin/stdbuf -oL "$sm" --run-dir "$work/run/host-0001" -q --sweep-interval 0 \
  >"$work/sm.out" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q "subnet up" "$work/sm.out" && break; sleep 0.1; done
grep -q "subnet up" "$work/sm.out" || fail "softib-sm: $(cat "$work/sm.out")"

# pair LABEL SERVER_ARGS -- CLIENT_ARGS: server on host-0003, client on host-0001, by a
# service ID of their own; outputs in $work/LABEL.{server,client}.{out,err}, exit codes in
# .rc once collected. The pairs run at once: each ends with DREQ/DREP (time-wait is the
# CM's, after the processes left). Every process gives up after its --timeout.
base=$((0x50F7000000 + $$ * 16))
declare -A runs  # LABEL.ROLE -> pid
pair() {
  local label=$1 id
  id=$(printf '0x%x' $((base + ${#started[@]})))
  shift
  local server_args=()
  while [[ $1 != -- ]]; do server_args+=("$1"); shift; done
  shift
  "${tied[@]}" "$perf" "${server_args[@]}" --run-dir "$work/run/host-0003" --service-id "$id" \
    --timeout 10 >"$work/$label.server.out" 2>"$work/$label.server.err" &
  runs[$label.server]=$!
  pids+=($!)
  "${tied[@]}" "$perf" "$@" --run-dir "$work/run/host-0001" --service-id "$id" --connect \
    --timeout 10 --json >"$work/$label.client.out" 2>"$work/$label.client.err" &
  runs[$label.client]=$!
  pids+=($!)
  started+=("$label")
}
started=()
pair lat send_lat -- send_lat -s 64 -n 200 --validate
pair bw write_bw -- write_bw -a --min-size 4096 --max-size 65536 -n 50 -t 16 --validate
pair refused write_bw -- read_bw -s 64 -n 10
# No server: the SA has no ServiceRecord for the ID.
"${tied[@]}" "$perf" send_lat --run-dir "$work/run/host-0001" --service-id 0x50F7FFFFFF --connect \
  --timeout 1 2>"$work/alone.err" &
runs[alone]=$!
pids+=($!)
# Each exit code, as each process ends (bounded by its --timeout).
for run in "${!runs[@]}"; do
  rc=0
  wait "${runs[$run]}" || rc=$?
  echo "$rc" >"$work/$run.rc"
done
for f in "$work"/*.err; do cat "$f"; done
rc() { cat "$work/$1.rc" 2>/dev/null || echo none; }
json() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"; }

[[ $(rc lat.client) == 0 && $(rc lat.server) == 0 ]] ||
  fail "send_lat: exits $(rc lat.client)/$(rc lat.server)"
server_gid=$(grep -oE 'registered service [^:]+: ServiceGID [0-9a-f:]+' "$work/lat.server.err" |
  awk '{print $NF}')
[[ -n $server_gid ]] || fail "the server did not say its GID"
grep -qE "client: ServiceRecord of service 0x[0-9a-f]+: ServiceGID $server_gid, name \"softib_perf send_lat\"" \
  "$work/lat.client.err" || fail "the client did not find the server's GID $server_gid"
grep -qE "client: PathRecord [0-9a-f:]+ -> $server_gid: SLID [0-9]+, DLID [0-9]+" \
  "$work/lat.client.err" || fail "no PathRecord to the server's GID"
grep -q "server: DREQ answered with DREP, time-wait left to the CM" "$work/lat.server.err" ||
  fail "server's disconnect"
grep -q "client: DREQ, DREP, time-wait left to the CM" "$work/lat.client.err" || fail "client's disconnect"
[[ $(json "$work/lat.client.out" "d['validated_messages']") -eq 200 ]] ||
  fail "send_lat: 200 messages validated"
[[ $(json "$work/lat.client.out" "len(d['results'])") -eq 1 ]] || fail "send_lat: one row"

[[ $(rc bw.client) == 0 && $(rc bw.server) == 0 ]] ||
  fail "write_bw: exits $(rc bw.client)/$(rc bw.server)"
[[ $(json "$work/bw.client.out" "len(d['results'])") -eq 5 ]] || fail "write_bw: five rows"
[[ $(json "$work/bw.client.out" "d['validated_messages']") -eq 5 ]] ||
  fail "write_bw: five targets checked"

[[ $(rc alone) == 1 ]] || fail "a client with no server: exit $(rc alone)"
grep -q "no ServiceRecord for service ID 0x50f7ffffff after 1 s .*is the server running?" \
  "$work/alone.err" || fail "a client with no server: the reason"

# A plan the server refuses: REJ CONSUMER_REJECT, its reason in the private data.
[[ $(rc refused.client) == 1 && $(rc refused.server) == 1 ]] ||
  fail "refused plan: exits $(rc refused.client)/$(rc refused.server)"
grep -q "the peer rejected the connection: CONSUMER_REJECT (28): the client asked for read_bw over RC, this server runs write_bw over RC" \
  "$work/refused.client.err" || fail "refused plan: the client's reason"
grep -q "server: REJ CONSUMER_REJECT" "$work/refused.server.err" || fail "refused plan: the server's REJ"
echo "PASS"
