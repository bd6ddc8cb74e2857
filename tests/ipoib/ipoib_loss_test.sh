#!/usr/bin/env bash
# IPoIB under loss (label ipoib): 2 % loss both ways on host-0002's cable (`softib fabric set
# host-0002:1 loss=20`, per mille), then a file sent through socat (TCP over IPoIB UD) from
# host-0002 to host-0004 arrives with the same sha256; the cable's lost counters say the
# faults happened. The size: SIZE_MIB (default 16; the issue's 64 MiB in bench runs).
#   ipoib_loss_test.sh SOFTIBD SOFTIB [SIZE_MIB]
softibd=$1
softib=$2
size_mib=${3:-16}
source "$(dirname "$0")/ipoib_two_hosts.sh"
two_hosts_up
[[ $(received "$ns_a" -c 1 -w 15 198.18.0.2) == 1 ]] || fail "ping before the loss"
"$softib" fabric --run-dir "$run" set host-0002:1 loss=20 >/dev/null || fail "set loss"
head -c "$((size_mib << 20))" /dev/urandom >"$work/sent"
"${tied[@]}" ip netns exec "$ns_b" socat -u TCP-LISTEN:5001,bind=198.18.0.2,reuseaddr \
  "OPEN:$work/received,creat,trunc" 2>"$work/socat-rx.err" &
receiver=$!
extra_pids+=("$receiver")
for _ in $(seq 300); do ip netns exec "$ns_b" ss -ltn | grep -q 198.18.0.2:5001 && break; sleep 0.05; done
start=$(date +%s.%N)
ip netns exec "$ns_a" timeout 120 socat -u "OPEN:$work/sent" TCP:198.18.0.2:5001 2>"$work/socat-tx.err" ||
  fail "socat sender: $(cat "$work/socat-tx.err")"
wait "$receiver" || fail "socat receiver: $(cat "$work/socat-rx.err")"
extra_pids=()
end=$(date +%s.%N)
sent=$(sha256sum <"$work/sent" | cut -d' ' -f1)
got=$(sha256sum <"$work/received" | cut -d' ' -f1)
# The cable's block in `links`: its line, then one line per direction (carried=N lost=N ...).
"$softib" fabric --run-dir "$run" links >"$work/links"
grep -A2 -E '^cable [0-9]+: .*host-0002:1' "$work/links" >"$work/cable" || fail "cable: $(cat "$work/links")"
cat "$work/cable"
read -r lost_ab lost_ba < <(sed -nE 's/.* lost=([0-9]+) .*/\1/p' "$work/cable" | xargs)
read -r carried_ab carried_ba < <(sed -nE 's/.* carried=([0-9]+) .*/\1/p' "$work/cable" | xargs)
[[ $lost_ab -gt 0 && $lost_ba -gt 0 ]] || fail "no loss counted on the cable: $(cat "$work/cable")"
secs=$(/usr/bin/python3 -c "print('%.2f' % ($end - $start))")
echo "$size_mib MiB at 2 % loss in $secs s (lost $lost_ab of $carried_ab, $lost_ba of $carried_ba); sha256 sent $sent received $got"
[[ $sent == "$got" ]] || fail "sha256 differs ($(stat -c %s "$work/received") bytes received)"
echo PASS
