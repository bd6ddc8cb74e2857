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
