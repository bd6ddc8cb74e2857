# Sourced by the tunnel tests: two softibd processes sharing the default fabric (1 spine,
# 2 leaves, 4 hosts), joined by UDP tunnels on loopback — A hosts part 1/2 (spine-01,
# leaf-01, host-0001/2) and serves it to ibsim clients with every port waiting for an SM;
# B hosts part 2/2 (leaf-02, host-0003/4) and greets A. Needs: $softibd $softib; sets
# $work (daemons.sh), $name (IBSIM_SOCKNAME), $run_a and $run_b.
source "$(dirname "${BASH_SOURCE[0]}")/daemons.sh"
name="softib-tun-$$"
run_a="$work/a"
run_b="$work/b"

start_daemon a --run-dir "$run_a" --fabric default --part 1/2 --listen udp:127.0.0.1:0 \
  --sm external --ibsim "$name"
port=$(cat "$run_a/tunnel.port")
start_daemon b --run-dir "$run_b" --fabric default --part 2/2 --listen udp:127.0.0.1:0 \
  --peer "udp:127.0.0.1:$port" --sm external

# tunnel_cables RUN_DIR: the `links` lines of the tunnel cables.
tunnel_cables() { "$softib" fabric --run-dir "$1" links | grep '^cable .* tunnel '; }
# wait_tunnels STATE: until every tunnel cable of both daemons is STATE (bounded).
wait_tunnels() {
  for _ in $(seq 100); do
    if ! tunnel_cables "$run_a" | grep -vq " $1 tunnel" && ! tunnel_cables "$run_b" | grep -vq " $1 tunnel"; then
      return 0
    fi
    sleep 0.1
  done
  fail "tunnel cables not $1: $(tunnel_cables "$run_a"; tunnel_cables "$run_b")"
}
wait_tunnels up

# umad2sim writes its fake sysfs under the current directory; LD_PRELOAD must be unset.
cd "$work"
sim() { env -u LD_PRELOAD IBSIM_SOCKNAME="$name" timeout 20 ibsim-run "$@" 2>"$work/err"; }
