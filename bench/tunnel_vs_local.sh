#!/usr/bin/env bash
# The UDP tunnel's cost: softib_perf send_lat (8 B) and write_bw (64 KiB, validated)
# between host-0001 and host-0003 of the default fabric (host -> leaf -> spine -> leaf ->
# host), first with the whole fabric in one softibd, then split over two softibd processes
# (--part 1/2 and 2/2, static routes) so that the spine-leaf-02 cables are UDP tunnels on
# loopback. Same run, same machine; prints both and the ratios.
#
#   tunnel_vs_local.sh SOFTIBD SOFTIB_PERF SOFTIB [ITERATIONS]
softibd=$1
perf=$2
softib=$3
iters=${4:-2000}
source "$(dirname "$0")/../tools/softibd/tests/daemons.sh"

# measure SERVER_RUN CLIENT_RUN TEST ARGS...: the client's result line (JSON)
measure() {
  local server_run=$1 client_run=$2 test=$3
  shift 3
  local oob="unix:$work/oob.sock"
  rm -f "$work/oob.sock"
  "$perf" "$test" "$@" --json --run-dir "$server_run" --oob "$oob" --timeout 30 >"$work/server.out" 2>&1 &
  local server=$!
  "$perf" "$test" "$@" --json --run-dir "$client_run" --oob "$oob" --connect --timeout 30 \
    >"$work/client.out" 2>&1 || fail "$test: $(cat "$work/client.out" "$work/server.out")"
  wait "$server" || fail "$test server: $(cat "$work/server.out")"
  cat "$work/client.out"
}
field() { grep -oE "\"$1\": *[0-9.e+-]+" | head -1 | sed -E 's/.*: *//'; }

run_pair() {  # SERVER_RUN CLIENT_RUN -> "lat_us bw_MBps"
  local lat bw
  lat=$(measure "$1" "$2" send_lat -s 8 -n "$iters" | field t_typical_us)
  bw=$(measure "$1" "$2" write_bw -s 65536 -n "$iters" --validate | field bw_average_mb_s)
  echo "$lat $bw"
}

start_daemon one --run-dir "$work/one" --fabric default
read -r local_lat local_bw < <(run_pair "$work/one/host-0003" "$work/one/host-0001")
stop_daemons

start_daemon a --run-dir "$work/a" --fabric default --part 1/2 --listen udp:127.0.0.1:0
start_daemon b --run-dir "$work/b" --fabric default --part 2/2 --listen udp:127.0.0.1:0 \
  --peer "udp:127.0.0.1:$(cat "$work/a/tunnel.port")"
for _ in $(seq 100); do
  "$softib" fabric --run-dir "$work/a" links | grep -q ' down tunnel' || break
  sleep 0.1
done
read -r tunnel_lat tunnel_bw < <(run_pair "$work/b/host-0003" "$work/a/host-0001")
"$softib" fabric --run-dir "$work/a" links | grep -E '^tunnel|udp sent'

printf '%-28s %14s %14s %8s\n' "host-0001 -> host-0003" "one softibd" "two (tunnel)" "ratio"
printf '%-28s %14s %14s %8s\n' "send_lat 8 B t_typical (us)" "$local_lat" "$tunnel_lat" \
  "$(awk -v a="$tunnel_lat" -v b="$local_lat" 'BEGIN {printf "%.2fx", a / b}')"
printf '%-28s %14s %14s %8s\n' "write_bw 64 KiB (MiB/s)" "$local_bw" "$tunnel_bw" \
  "$(awk -v a="$tunnel_bw" -v b="$local_bw" 'BEGIN {printf "%.2fx", a / b}')"
