#!/usr/bin/env bash
# Fails when a process the tests of this checkout started is still running: softibd, ibsim,
# OpenSM, softib-sm, a test client or a test binary. Run it after the tests
# (scripts/test-all.sh does, at its end). It lists what it finds and exits 1; it never kills.
#
# A process is this checkout's when
#   - its executable is a file under this checkout's build/ (the same file: compared by
#     device and inode, so a build tree bind-mounted elsewhere is still recognised and
#     another checkout's identical paths are not), or it runs a deleted file (relinked
#     since) whose path was under build/, seen from this mount namespace; or
#   - $SOFTIB_TEST_RUN is set and the process's environment carries the same value: the
#     tests pass their environment on, so this also finds ibsim, OpenSM and the tools
#     under ibsim-run (whose executables live in /usr) and shells of shell tests.
# Only processes of this user are looked at, never this script, its callers or its children.
# Processes that are on their way out (a parent-death SIGKILL just sent) get up to 5 s.
#
#   scripts/check-no-leftovers.sh [BUILD_ROOT]     (default: build/ of this checkout)
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd -P)
build_root=${1:-$repo/build}
if [[ ! -d "$build_root" ]]; then
  echo "check-no-leftovers: no build tree at $build_root: nothing can be left running"
  exit 0
fi
build_root=$(cd "$build_root" && pwd -P)
me=$$
uid=$(id -u)
my_ns=$(readlink /proc/self/ns/mnt)

# device:inode of every executable regular file in the build tree.
declare -A build_inodes
while read -r id; do build_inodes[$id]=1; done < <(
  find "$build_root" -type f -perm -u+x -printf '%D:%i\n' 2>/dev/null)

# This script's ancestors (its callers) are never leftovers, nor is anything below it.
declare -A skip
pid=$me
while [[ -n "$pid" && "$pid" -gt 1 ]]; do
  skip[$pid]=1
  pid=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
done
below_me() {  # PID: whether this script is among its ancestors
  local p=$1
  while [[ -n "$p" && "$p" -gt 1 ]]; do
    [[ "$p" == "$me" ]] && return 0
    p=$(awk '/^PPid:/ {print $2}' "/proc/$p/status" 2>/dev/null)
  done
  return 1
}

# Prints "PID why" for each leftover now.
scan() {
  local dir pid state exe id
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [[ -n "${skip[$pid]:-}" ]] && continue
    [[ $(stat -c %u "$dir" 2>/dev/null) == "$uid" ]] || continue
    state=$(awk '/^State:/ {print $2}' "$dir/status" 2>/dev/null) || continue
    [[ -z "$state" || "$state" == Z || "$state" == X ]] && continue  # gone, or a zombie
    below_me "$pid" && continue
    exe=$(readlink "$dir/exe" 2>/dev/null) || exe=""
    id=$(stat -L -c '%d:%i' "$dir/exe" 2>/dev/null) || id=""
    if [[ -n "$id" && -n "${build_inodes[$id]:-}" ]]; then  # both print the device in decimal
      echo "$pid build-binary"
      continue
    fi
    if [[ "$exe" == "$build_root/"*" (deleted)" &&
      $(readlink "$dir/ns/mnt" 2>/dev/null) == "$my_ns" ]]; then
      echo "$pid deleted-build-binary"
      continue
    fi
    if [[ -n "${SOFTIB_TEST_RUN:-}" ]] &&
      tr '\0' '\n' 2>/dev/null <"$dir/environ" | grep -qxF "SOFTIB_TEST_RUN=$SOFTIB_TEST_RUN"; then
      echo "$pid test-run-environment"
    fi
  done
}

found=$(scan)
for _ in $(seq 50); do
  [[ -z "$found" ]] && break
  sleep 0.1
  found=$(scan)
done
if [[ -z "$found" ]]; then
  echo "check-no-leftovers: no process of $build_root${SOFTIB_TEST_RUN:+ or of test run $SOFTIB_TEST_RUN} left running"
  exit 0
fi
echo "check-no-leftovers: FAIL: processes the tests started are still running:" >&2
while read -r pid why; do
  cmd=$(tr "\\0" " " 2>/dev/null <"/proc/$pid/cmdline" | cut -c1-200)
  echo "  pid $pid ($why): ${cmd:-?}" >&2
done <<<"$found"
echo "(stop them by pid; nothing was killed here)" >&2
exit 1
