#!/usr/bin/env bash
# softib_perf --service-id between user processes on two hosts of a softibd fabric (the
# default fabric: host-0001 and host-0003 behind different leaves), no out-of-band channel:
# the server registers a ServiceRecord and listens on the CM, the client finds it through
# the SA and connects through the CM. The SA is softib-sm's on host-0001 (--sm external:
# softibd's internal SM answers no GetTable yet, runtime/al README).
#
#   service_id_test.sh SOFTIBD SOFTIB_PERF SOFTIB_SM
# Checks: send_lat and write_bw with --validate (exit codes, the ServiceRecord's GID and the
# path's LIDs in the transcript, the payloads validated); a client with no server (exit 1,
# the reason); a plan the server refuses (REJ CONSUMER_REJECT with the reason, both exit 1).
set -euo pipefail
softibd=$1
perf=$2
sm=$3

work=$(mktemp -d /tmp/softib_perf_cm.XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkfifo "$work/ready"
"$softibd" --run-dir "$work/run" --fabric default --sm external --ready-fd 3 3>"$work/ready" \
  >"$work/softibd.log" 2>&1 &
pids+=($!)
timeout 30 head -n1 "$work/ready" | grep -q ready || fail "softibd not ready: $(cat "$work/softibd.log")"
/usr/bin/stdbuf -oL "$sm" --run-dir "$work/run/host-0001" -q --sweep-interval 0 >"$work/sm.out" 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q "subnet up" "$work/sm.out" && break; sleep 0.1; done
grep -q "subnet up" "$work/sm.out" || fail "softib-sm: $(cat "$work/sm.out")"

# pair SERVER_ARGS -- CLIENT_ARGS: server on host-0003, client on host-0001; sets server_rc,
# client_rc; outputs in $work/{server,client}.{out,err}.
service=$(printf '0x%x' $((0x50F7000000 + $$)))
pair() {
  local server_args=()
  while [[ $1 != -- ]]; do server_args+=("$1"); shift; done
  shift
  "$perf" "${server_args[@]}" --run-dir "$work/run/host-0003" --service-id "$service" \
    --timeout 10 >"$work/server.out" 2>"$work/server.err" &
  local server=$!
  client_rc=0
  "$perf" "$@" --run-dir "$work/run/host-0001" --service-id "$service" --connect --timeout 10 \
    --json >"$work/client.out" 2>"$work/client.err" || client_rc=$?
  server_rc=0
  wait "$server" || server_rc=$?
}
json() { /usr/bin/python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$1" "$2"; }
show() { cat "$work/client.err" "$work/server.err" "$work/client.out"; }

pair send_lat -- send_lat -s 64 -n 200 --validate
show
[[ $client_rc -eq 0 && $server_rc -eq 0 ]] || fail "send_lat: exits $client_rc/$server_rc"
server_gid=$(grep -oE 'registered service [^:]+: ServiceGID [0-9a-f:]+' "$work/server.err" | awk '{print $NF}')
[[ -n $server_gid ]] || fail "the server did not say its GID"
grep -q "client: ServiceRecord of service $service: ServiceGID $server_gid, name \"softib_perf send_lat\"" \
  "$work/client.err" || fail "the client did not find the server's GID $server_gid"
grep -qE "client: PathRecord [0-9a-f:]+ -> $server_gid: SLID [0-9]+, DLID [0-9]+" "$work/client.err" ||
  fail "no PathRecord to the server's GID"
grep -q "server: DREQ answered with DREP, time-wait over" "$work/server.err" || fail "server's disconnect"
grep -q "client: DREQ, DREP, time-wait over" "$work/client.err" || fail "client's disconnect"
[[ $(json "$work/client.out" "d['validated_messages']") -eq 200 ]] || fail "send_lat: 200 messages validated"
[[ $(json "$work/client.out" "len(d['results'])") -eq 1 ]] || fail "send_lat: one row"

pair write_bw -- write_bw -a --min-size 4096 --max-size 65536 -n 50 -t 16 --validate
show
[[ $client_rc -eq 0 && $server_rc -eq 0 ]] || fail "write_bw: exits $client_rc/$server_rc"
[[ $(json "$work/client.out" "len(d['results'])") -eq 5 ]] || fail "write_bw: five rows"
[[ $(json "$work/client.out" "d['validated_messages']") -eq 5 ]] || fail "write_bw: five targets checked"

# No server: the SA has no ServiceRecord for the ID.
rc=0
"$perf" send_lat --run-dir "$work/run/host-0001" --service-id 0x50F7FFFFFF --connect --timeout 1 \
  2>"$work/alone.err" || rc=$?
cat "$work/alone.err"
[[ $rc -eq 1 ]] || fail "a client with no server: exit $rc"
grep -q "no ServiceRecord for service ID 0x50f7ffffff after 1 s .*is the server running?" \
  "$work/alone.err" || fail "a client with no server: the reason"

# A plan the server refuses: REJ CONSUMER_REJECT, its reason in the private data.
pair write_bw -- read_bw -s 64 -n 10
show
[[ $client_rc -eq 1 && $server_rc -eq 1 ]] || fail "refused plan: exits $client_rc/$server_rc"
grep -q "the peer rejected the connection: CONSUMER_REJECT (28): the client asked for read_bw over RC, this server runs write_bw over RC" \
  "$work/client.err" || fail "refused plan: the client's reason"
grep -q "server: REJ CONSUMER_REJECT" "$work/server.err" || fail "refused plan: the server's REJ"
echo "PASS"
