#!/usr/bin/env bash
# The UDP tunnel's cost: softib_perf between host-0001 and host-0003 of the default fabric
# (host -> leaf -> spine -> leaf -> host), first with the whole fabric in one softibd, then
# split over two softibd processes (--part 1/2 and 2/2) so that the spine-leaf-02 cables
# are UDP tunnels on loopback. The issue's set: send/write/read latency (8 B, t_typical) and
# write/read/send bandwidth (64 KiB; write validated), each pair connected the IB way:
# the server registers a ServiceRecord and listens on the CM, the client finds it through
# the SA and the CM (--service-id; softib-sm on host-0001 is the SM and SA, --sm external).
# Same run, same machine; prints both columns and the ratios.
#
#   tunnel_vs_local.sh SOFTIBD SOFTIB_PERF SOFTIB SOFTIB_SM [ITERATIONS]
softibd=$1
perf=$2
softib=$3
sm=$4
iters=${5:-2000}
source "$(dirname "$0")/../tools/softibd/tests/daemons.sh"

sm_pid=""
start_sm() {  # RUN_DIR of host-0001: softib-sm there until stop_sm, once the subnet is up
  "${tied[@]}" /usr/bin/stdbuf -oL "$sm" --run-dir "$1" -q --sweep-interval 0 >"$work/sm.out" 2>&1 &
  sm_pid=$!
  for _ in $(seq 300); do grep -q "subnet up" "$work/sm.out" && return 0; sleep 0.1; done
  fail "softib-sm: $(cat "$work/sm.out")"
}
stop_sm() {
  [[ -n "$sm_pid" ]] && kill -TERM "$sm_pid" 2>/dev/null && wait "$sm_pid" 2>/dev/null
  sm_pid=""
}
trap 'stop_sm; cleanup' EXIT

# measure SERVER_RUN CLIENT_RUN TEST ARGS...: the client's result line (JSON) in
# $work/client.out. Run by this shell itself (not in a pipeline's subshell): "${tied[@]}"
# ties the server to this shell.
service=$((0x50F8000000 + $$ * 256))
measure() {
  local server_run=$1 client_run=$2 test=$3
  shift 3
  service=$((service + 1))
  local id
  id=$(printf '0x%x' "$service")
  "${tied[@]}" "$perf" "$test" "$@" --json --run-dir "$server_run" --service-id "$id" \
    --timeout 30 >"$work/server.out" 2>&1 &
  local server=$!
  "$perf" "$test" "$@" --json --run-dir "$client_run" --service-id "$id" --connect --timeout 30 \
    >"$work/client.out" 2>"$work/client.err" ||
    fail "$test: $(cat "$work/client.out" "$work/client.err" "$work/server.out")"
  wait "$server" || fail "$test server: $(cat "$work/server.out")"
}
field() { grep -oE "\"$1\": *[0-9.e+-]+" | head -1 | sed -E 's/.*: *//'; }

tests=(send_lat write_lat read_lat write_bw read_bw send_bw)
run_set() {  # SERVER_RUN CLIENT_RUN -> one figure per test, in the order of $tests
  local t
  for t in "${tests[@]}"; do
    case $t in
      *_lat) measure "$1" "$2" "$t" -s 8 -n "$iters" && field t_typical_us <"$work/client.out" ;;
      write_bw)
        measure "$1" "$2" "$t" -s 65536 -n "$iters" --validate &&
          field bw_average_mb_s <"$work/client.out"
        ;;
      *_bw) measure "$1" "$2" "$t" -s 65536 -n "$iters" && field bw_average_mb_s <"$work/client.out" ;;
    esac
  done
}

start_daemon one --run-dir "$work/one" --fabric default --sm external
start_sm "$work/one/host-0001"
run_set "$work/one/host-0003" "$work/one/host-0001" >"$work/local.figures"
mapfile -t local_figures <"$work/local.figures"
stop_sm
stop_daemons

start_daemon a --run-dir "$work/a" --fabric default --part 1/2 --listen udp:127.0.0.1:0 \
  --sm external
start_daemon b --run-dir "$work/b" --fabric default --part 2/2 --listen udp:127.0.0.1:0 \
  --peer "udp:127.0.0.1:$(cat "$work/a/tunnel.port")" --sm external
for _ in $(seq 100); do
  "$softib" fabric --run-dir "$work/a" links | grep -q ' down tunnel' || break
  sleep 0.1
done
start_sm "$work/a/host-0001"
run_set "$work/b/host-0003" "$work/a/host-0001" >"$work/tunnel.figures"
mapfile -t tunnel_figures <"$work/tunnel.figures"
stop_sm
"$softib" fabric --run-dir "$work/a" links | grep -E '^tunnel|udp sent'

echo "load: $(cut -d' ' -f1-3 /proc/loadavg); $iters iterations; connected by --service-id (SA + CM)"
printf '%-32s %12s %14s %8s\n' "host-0001 -> host-0003" "one softibd" "two (tunnel)" "ratio"
for i in "${!tests[@]}"; do
  case ${tests[$i]} in
    *_lat) label="${tests[$i]} 8 B t_typical (us)" ;;
    *) label="${tests[$i]} 64 KiB (MiB/s)" ;;
  esac
  printf '%-32s %12.1f %14.1f %8s\n' "$label" "${local_figures[$i]}" "${tunnel_figures[$i]}" \
    "$(awk -v a="${tunnel_figures[$i]}" -v b="${local_figures[$i]}" 'BEGIN {printf "%.2fx", a / b}')"
done
