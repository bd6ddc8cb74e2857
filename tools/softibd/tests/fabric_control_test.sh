#!/usr/bin/env bash
# softib fabric against two softibd daemons joined by UDP tunnels (two_daemons.sh): the
# control socket lists the cables, refuses bad requests clearly, stops traffic with
# loss=1000 on the tunnel cables (counters move, SMPs to leaf-02 time out), flaps a tunnel
# cable (the far daemon sees it go down and come back; softib-sm activates it again),
# flaps a host's cable (the host's port goes Down, comes back in Init, softib-sm activates
# it), pulls a host's CA out and puts it back (`remove`/`add`: the cable follows, softib-sm
# activates the port again), and captures a cable to an ERF file that softib mad decode
# reads.
#
#   fabric_control_test.sh SOFTIBD SOFTIB SOFTIB_SM
softibd=$(realpath "$1")
softib=$(realpath "$2")
softib_sm=$(realpath "$3")
source "$(dirname "$0")/two_daemons.sh"

ctl() { "$softib" fabric --run-dir "$run_a" "$@"; }
# refused CODE MESSAGE ARGS...: the request fails with exit CODE and MESSAGE on stderr.
refused() {
  local code=$1 message=$2 rc=0
  shift 2
  "$softib" fabric "$@" >"$work/out" 2>"$work/err.ctl" || rc=$?
  [[ $rc -eq $code ]] || fail "softib fabric $*: exit $rc, wanted $code: $(cat "$work/out" "$work/err.ctl")"
  grep -qF "$message" "$work/err.ctl" || fail "softib fabric $*: $(cat "$work/err.ctl")"
}
refused 2 'unknown request "frobnicate"' --run-dir "$run_a" frobnicate
refused 2 'no node is named "nosuch"' --run-dir "$run_a" set nosuch:1 loss=5
refused 2 'loss=2000: a rate per mille' --run-dir "$run_a" set 0 loss=2000
refused 2 'keys are loss' --run-dir "$run_a" set 0 bogus=1
refused 2 'no cable 99' --run-dir "$run_a" down 99
refused 2 'down takes 1 argument' --run-dir "$run_a" down
refused 2 "is not captured" --run-dir "$run_a" capture-stop 0
refused 1 'is softibd --fabric running there?' --run-dir "$work/nothing" links
refused 2 'remove takes 1 argument: HOST' --run-dir "$run_a" remove
refused 2 'no node is named "nosuch"' --run-dir "$run_a" remove nosuch
refused 2 'host-0003 is not a host of this daemon' --run-dir "$run_a" remove host-0003
refused 2 "host-0002's CA is present" --run-dir "$run_a" add host-0002

# A's cables: leaf-01's two uplinks and two hosts in process, the spine's two tunnels.
links=$(ctl links)
[[ $(grep -c '^cable ' <<<"$links") -eq 6 ]] || fail "A has 6 cables: $links"
mapfile -t tunnels < <(grep '^cable .* tunnel ' <<<"$links" | sed -E 's/^cable ([0-9]+):.*/\1/')
[[ ${#tunnels[@]} -eq 2 ]] || fail "2 tunnel cables: $links"

out=$(sim "$softib_sm" --once) || fail "softib-sm: $(cat "$work/err")"
grep -q '16 ports ACTIVE' <<<"$out" || fail "softib-sm: $out"
leaf2=$(sim ibnetdiscover | grep '^Switch.*"leaf-02"' | grep -oE 'lid [0-9]+' | head -1 | cut -d' ' -f2)
[[ -n "$leaf2" ]] || fail "leaf-02's LID: $(sim ibnetdiscover)"
sim smpquery nodedesc "$leaf2" | grep -q leaf-02 || fail "SMP to leaf-02: $(cat "$work/err")"

# Every packet into the tunnels lost: leaf-02 stops answering, the loss is counted.
for c in "${tunnels[@]}"; do ctl set "$c" loss=1000 dir=a-b; done
if sim smpquery -t 100 nodedesc "$leaf2" >/dev/null; then fail "leaf-02 answered through loss=1000"; fi
links=$(ctl links)
grep -q 'a->b carried=[0-9]* lost=[1-9]' <<<"$links" || fail "no loss counted: $links"
grep -q 'loss=1000 corrupt=0' <<<"$links" || fail "loss=1000 not shown: $links"
for c in "${tunnels[@]}"; do ctl set "spine-01:$(grep "^cable $c:" <<<"$links" | sed -E 's/.*spine-01:([0-9]+).*/\1/')" loss=0; done
sim smpquery nodedesc "$leaf2" | grep -q leaf-02 || fail "SMP to leaf-02 after loss=0: $(cat "$work/err")"

# Corruption on the wire: the far daemon's VCRC/ICRC check drops it, counted there.
ctl set "${tunnels[0]}" corrupt=1000 dir=a-b
ctl set "${tunnels[1]}" corrupt=1000 dir=a-b
if sim smpquery -t 100 nodedesc "$leaf2" >/dev/null; then fail "leaf-02 answered through corrupt=1000"; fi
"$softib" fabric --run-dir "$run_b" links | grep -qE 'bad_vcrc=[1-9]|bad_icrc=[1-9]' ||
  fail "B counted no CRC drops: $("$softib" fabric --run-dir "$run_b" links)"
for c in "${tunnels[@]}"; do ctl set "$c" corrupt=0; done

# A flap of one tunnel cable: both daemons see it down, then up; the SM reactivates it.
ctl down "${tunnels[0]}"
for _ in $(seq 50); do
  [[ $(tunnel_cables "$run_b" | grep -c ' down tunnel') -eq 1 ]] && break
  sleep 0.1
done
[[ $(tunnel_cables "$run_b" | grep -c ' down tunnel') -eq 1 ]] || fail "B did not see the flap: $(tunnel_cables "$run_b")"
tunnel_cables "$run_a" | grep -q "^cable ${tunnels[0]}: .* down tunnel .* disabled" || fail "A: $(tunnel_cables "$run_a")"
ctl up "${tunnels[0]}"
wait_tunnels up
grep -q 'flaps=1' <<<"$(tunnel_cables "$run_b"; "$softib" fabric --run-dir "$run_b" links)" || fail "B counted no flap"
out=$(sim "$softib_sm" --once) || fail "softib-sm after the flap: $(cat "$work/err")"
# The flapped cable's two ends (spine-01 on A, leaf-02 on B) came back in Init: the SM
# activates exactly those.
grep -q ' 2 ports ACTIVE' <<<"$out" || fail "softib-sm after the flap: $out"

# A flap of a host's cable: the host's own port (its SMA, asked from an ibsim client at that
# host) goes Down/Polling with the cable, comes back in Init, and softib-sm activates it
# (and leaf-01's end) again.
wait_port "$name" host-0002 Active LinkUp
ctl down host-0002:1
wait_port "$name" host-0002 Down Polling
ctl up host-0002:1
wait_port "$name" host-0002 Initialize LinkUp
out=$(sim "$softib_sm" --once) || fail "softib-sm after the host's flap: $(cat "$work/err")"
grep -q ' 2 ports ACTIVE' <<<"$out" || fail "softib-sm after the host's flap: $out"
wait_port "$name" host-0002 Active LinkUp

# A host's CA pulled out and put back: its cable goes down with it and cannot be brought up
# alone; back, the port waits in Init and softib-sm activates it.
out=$(ctl remove host-0002)
[[ $out == "host-0002: CA 0x0002c90300a00020 removed" ]] || fail "remove: $out"
refused 2 "host-0002's CA is removed already" --run-dir "$run_a" remove host-0002
refused 2 'has no CA at its end' --run-dir "$run_a" up host-0002:1
ctl links | grep -q '^cable [0-9]*: leaf-01:2 <-> host-0002:1 down' || fail "links: $(ctl links)"
out=$(ctl add host-0002)
[[ $out == "host-0002: CA 0x0002c90300a00020 added" ]] || fail "add: $out"
wait_port "$name" host-0002 Initialize LinkUp
out=$(sim "$softib_sm" --once) || fail "softib-sm after the host's return: $(cat "$work/err")"
grep -q ' 2 ports ACTIVE' <<<"$out" || fail "softib-sm after the host's return: $out"
wait_port "$name" host-0002 Active LinkUp

# Capture the tunnel cables; the files hold what the cables carried, and decode.
ctl capture "${tunnels[0]}" cap0.erf
ctl capture "${tunnels[1]}" cap1.erf
refused 2 'already captured' --run-dir "$run_a" capture "${tunnels[1]}" other.erf
sim smpquery nodedesc "$leaf2" | grep -q leaf-02 || fail "SMP to leaf-02 while capturing: $(cat "$work/err")"
total=0
for i in 0 1; do
  out=$(ctl capture-stop "${tunnels[$i]}")
  grep -qE "^[0-9]+ packets written to $work/cap$i.erf" <<<"$out" || fail "capture-stop: $out"
  n=${out%% *}
  total=$((total + n))
  if [[ $n -gt 0 ]]; then
    "$softib" mad decode --erf "$work/cap$i.erf" | grep -q 'NodeDescription' ||
      fail "cap$i.erf: $("$softib" mad decode --erf "$work/cap$i.erf" 2>&1 | head -30)"
  fi
done
[[ $total -ge 2 ]] || fail "the SMP and its answer crossed the tunnels: $total packets captured"
echo "PASS: softib fabric: links, refusals, loss and corruption on tunnel cables, a flap both daemons see, a host port following its cable, a host removed and added, capture"
