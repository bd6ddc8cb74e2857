# Sourced by the shell tests and scripts that start softibd, ibsim, softib-sm, OpenSM or
# clients. `"${tied[@]}" CMD ARGS...` runs CMD tied to this shell: the kernel sends it
# SIGKILL when the shell ends, however it ends (also SIGKILL or a ctest timeout, where no
# EXIT trap runs). setpriv sets the parent-death signal, which survives the execs that
# follow; sh then checks that its parent is still this shell (the race between the fork
# and the prctl: a parent already gone would never signal) and execs CMD, so $! is CMD's
# pid and CMD can be stopped by it.
#
# Only for commands this shell starts itself (`"${tied[@]}" "$softibd" ... &`): in a
# ( ... ) subshell the parent is the subshell, and the check refuses to run CMD (exit 127).
# The EXIT traps that stop the daemons in order stay: this is the net under them.
# shellcheck disable=SC2016 # $PPID, $0 and $@ are the inner sh's
tied=(setpriv --pdeathsig KILL -- /bin/sh -c '[ "$PPID" = "$0" ] || exit 127; exec "$@"' "$$")

# `tied_netns_add NAME`: `ip netns add NAME`, and the namespace is deleted when this shell
# ends, however it ends. A SIGKILLed test (a ctest timeout) never runs its EXIT trap, and a
# namespace outlives every process in it. The first call starts a reaper whose parent-death
# signal is SIGTERM (catchable, unlike the KILL above); on it the reaper deletes every
# namespace named in its list file. The test's own cleanup still deletes them first; the
# reaper's second try is harmless. Call it from the test's shell itself, not a subshell.
_tied_reap_list=""
tied_netns_add() {
  ip netns add "$1" || return
  if [[ -z $_tied_reap_list ]]; then
    _tied_reap_list=$(mktemp /tmp/softib-reap.XXXXXX)
    # shellcheck disable=SC2016 # the inner sh's variables
    setpriv --pdeathsig TERM -- /bin/sh -c '[ "$PPID" = "$0" ] || exit 127
      trap '\''kill "$s" 2>/dev/null
        while read -r ns; do ip netns delete "$ns" 2>/dev/null; done <"$1"
        rm -f "$1"; exit 0'\'' TERM
      while :; do sleep 600 & s=$!; wait "$s"; done' "$$" "$_tied_reap_list" \
      </dev/null >/dev/null 2>&1 &
  fi
  echo "$1" >>"$_tied_reap_list"
}
