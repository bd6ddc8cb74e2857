#!/usr/bin/env bash
# IBAT for user processes (label ipoib): softibd --fabric default --sm internal, sibi0 on
# host-0002 (198.18.0.1, fd00:5b18::1) and host-0004 (198.18.0.2, fd00:5b18::2). Through each
# node's IBAT device (<run-dir>/<host>/ibat, softib/user/ibat.h):
#   `softib ibat ips` on host-0002 lists 198.18.0.1 and fd00:5b18::1 with host-0002's GID
#   (as `softib ipoib show` prints it); `softib ibat resolve 198.18.0.2` (and fd00:5b18::2)
#   from host-0002 gives host-0004's GID and QPN and a path whose DLID is host-0004's LID,
#   SLID host-0002's; an address nobody has -> TIMEOUT (exit 3); a --src no interface holds
#   -> NOT_FOUND (exit 3); garbage -> a clear error (exit 2); no device -> exit 1.
#   softib_ibat_client (softib/user/ibat.h) of the 64-bit and of the m32 tree resolves
#   198.18.0.2 to the same GID, QPN and DLID.
#   ipoib_ibat_test.sh SOFTIBD SOFTIB IBAT_CLIENT M32_IBAT_CLIENT
softibd=$1
softib=$2
client=$3
m32_client=$4
[[ -x $m32_client ]] || { echo "FAIL: no m32 softib_ibat_client at $m32_client (build the m32 preset first)"; exit 1; }
source "$(dirname "$0")/ipoib_two_hosts.sh"
two_hosts_up
a=$run/host-0002
b=$run/host-0004
[[ -S $a/ibat && -S $b/ibat ]] || fail "no IBAT device socket: $(ls "$a" "$b")"

# show_field HOST_DIR WORD: the value after WORD in `softib ipoib show` (first occurrence).
show_field() {
  "$softib" ipoib show --run-dir "$1" sibi0 | tr ' ' '\n' | grep -A1 -x "$2" | sed -n 2p
}
gid_a=$(show_field "$a" gid)
gid_b=$(show_field "$b" gid)
qpn_b=$(show_field "$b" qpn)
lid_a=$(show_field "$a" lid)
lid_b=$(show_field "$b" lid)
[[ -n $gid_a && -n $gid_b && -n $qpn_b && -n $lid_b ]] || fail "ipoib show: $gid_a $gid_b $qpn_b $lid_b"

"$softib" ibat ips --run-dir "$a" >"$work/ips.out" 2>&1 || fail "ibat ips: $(cat "$work/ips.out")"
grep -q "^198\.18\.0\.1 gid $gid_a pkey 0xffff port 1 " "$work/ips.out" ||
  fail "ibat ips lacks 198.18.0.1 with $gid_a: $(cat "$work/ips.out")"
grep -q "^fd00:5b18::1 gid $gid_a " "$work/ips.out" || fail "ibat ips lacks fd00:5b18::1: $(cat "$work/ips.out")"
grep -qx "2 of 2 addresses" "$work/ips.out" || fail "ibat ips count: $(cat "$work/ips.out")"

# resolve_check ADDR: host-0004's GID/QPN, a path to its LID.
resolve_check() {
  "$softib" ibat resolve --run-dir "$a" "$@" >"$work/resolve.out" 2>&1 ||
    fail "ibat resolve $*: $(cat "$work/resolve.out")"
  grep -qx "  sgid $gid_a" "$work/resolve.out" || fail "resolve $* sgid: $(cat "$work/resolve.out")"
  grep -qx "  dgid $gid_b" "$work/resolve.out" || fail "resolve $* dgid: $(cat "$work/resolve.out")"
  grep -q "^  pkey 0xffff qpn $qpn_b mac " "$work/resolve.out" ||
    fail "resolve $* qpn (want $qpn_b): $(cat "$work/resolve.out")"
  grep -q "^  path dlid $lid_b slid $lid_a .* dgid $gid_b\$" "$work/resolve.out" ||
    fail "resolve $* path (want dlid $lid_b slid $lid_a): $(cat "$work/resolve.out")"
}
resolve_check 198.18.0.2
resolve_check --src 198.18.0.1 198.18.0.2
resolve_check fd00:5b18::2

# expect_error CODE TEXT ARGS...: `softib ibat ARGS` exits CODE saying TEXT.
expect_error() {
  local code=$1 text=$2 rc=0
  shift 2
  "$softib" ibat "$@" >"$work/err.out" 2>&1 || rc=$?
  [[ $rc == "$code" ]] || fail "ibat $* exited $rc, not $code: $(cat "$work/err.out")"
  grep -q "$text" "$work/err.out" || fail "ibat $* did not say \"$text\": $(cat "$work/err.out")"
}
expect_error 3 "198.18.0.99: TIMEOUT" resolve --run-dir "$a" 198.18.0.99
expect_error 3 "NOT_FOUND (no interface holds 198.18.0.77)" resolve --run-dir "$a" --src 198.18.0.77 198.18.0.2
expect_error 2 '"198.18.0.300" is not an IPv4 or IPv6 address' resolve --run-dir "$a" 198.18.0.300
expect_error 2 '"bogus" is not an IPv4 or IPv6 address' resolve --run-dir "$a" --src bogus 198.18.0.2
expect_error 2 "INVALID_PARAMETER" resolve --run-dir "$a" 239.1.1.1
expect_error 1 "no IBAT device at $work/nowhere/ibat" ips --run-dir "$work/nowhere"

# The m32 client natively where the kernel runs 32-bit programs (its usage: exit 2), else
# under qemu-i386 (as the integration tests' M32 cases run theirs).
rc=0
"$m32_client" >/dev/null 2>&1 || rc=$?
m32_run=("$m32_client")
[[ $rc == 2 ]] || m32_run=(/usr/bin/qemu-i386 "$m32_client")
want="dgid $gid_b qpn $qpn_b dlid $lid_b"
got=$("$client" "$a" 198.18.0.2 2>&1) || fail "$client: $got"
[[ $got == "$want" ]] || fail "$client: \"$got\", want \"$want\""
got=$("${m32_run[@]}" "$a" 198.18.0.2 2>&1) || fail "${m32_run[*]}: $got"
[[ $got == "$want" ]] || fail "${m32_run[*]}: \"$got\", want \"$want\""
# EI_CLASS (ELF byte 4): 1 is a 32-bit program.
[[ $(od -An -tu1 -j4 -N1 "$m32_client" | tr -d ' ') == 1 ]] || fail "$m32_client is not a 32-bit program"
echo "PASS: ibat ips/resolve from host-0002 (softib, 64-bit and ${m32_run[*]} clients): $want"
