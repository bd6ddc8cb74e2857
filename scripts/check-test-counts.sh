#!/usr/bin/env bash
# check-test-counts.sh BUILD_DIR PRESET [--label L] [--exclude-tests RE] [FOLDER...]: fails when a
# label of PRESET has fewer tests in BUILD_DIR than its minimum in tests/min_test_counts.txt,
# so that the suite cannot shrink silently (a folder, a test binary or a gtest case dropped
# from the build). With --label L, counts only the tests that also carry label L, with
# --exclude-tests RE only those whose names do not match RE (the tsan preset runs the label
# `threaded` but not the suites under umad2sim); with FOLDERs, the tests of BUILD_DIR/FOLDER
# for each; without, the whole tree. Prints every label's count and minimum.
#
# Run it after the build: gtest_discover_tests(DISCOVERY_MODE PRE_TEST) lists a binary's
# cases only once the binary exists. A label of the tree with no minimum for PRESET fails
# too (add its line). How to raise a minimum: tests/min_test_counts.txt.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 BUILD_DIR PRESET [--label L] [--exclude-tests RE] [FOLDER...]" >&2
  exit 2
fi
build=$1
preset=$2
shift 2
base=()
while [ "${1:-}" = --label ] || [ "${1:-}" = --exclude-tests ]; do
  if [ "$1" = --label ]; then base+=(-L "^$2\$"); else base+=(-E "$2"); fi
  shift 2
done
folders=("$@")
[ ${#folders[@]} -eq 0 ] && folders=(.)
for folder in "${folders[@]}"; do
  if [ ! -f "$build/$folder/CTestTestfile.cmake" ]; then
    echo "check-test-counts: no tests configured in $build/$folder" >&2
    exit 2
  fi
done
# SOFTIB_MIN_TEST_COUNTS: another file of minimums (to try the check itself).
minimums=${SOFTIB_MIN_TEST_COUNTS:-"$(cd "$(dirname "$0")/.." && pwd)/tests/min_test_counts.txt"}

# Tests of `label` ("all": every test) in the folders.
count() {
  local total=0 n folder
  local select=()
  [ "$1" != all ] && select=(-L "^$1\$")
  for folder in "${folders[@]}"; do
    n=$(ctest --test-dir "$build/$folder" -N "${base[@]}" "${select[@]}" | sed -n 's/^Total Tests: //p')
    total=$((total + ${n:-0}))
  done
  echo "$total"
}

declare -A minimum=()
while read -r p label min rest; do
  [[ -z "$p" || "$p" == \#* ]] && continue
  if [[ -n "$rest" || ! "$min" =~ ^[0-9]+$ ]]; then
    echo "check-test-counts: malformed line in $minimums: $p $label $min $rest" >&2
    exit 2
  fi
  [ "$p" = "$preset" ] && minimum[$label]=$min
done <"$minimums"
if [ ${#minimum[@]} -eq 0 ]; then
  echo "check-test-counts: no minimums for preset '$preset' in $minimums" >&2
  exit 2
fi

# Every label the tree has must have a minimum (else it could shrink to nothing unnoticed).
declare -A labels=()
for label in "${!minimum[@]}"; do labels[$label]=1; done
for folder in "${folders[@]}"; do
  while read -r label; do
    [ -n "$label" ] && labels[$label]=1
  done < <(ctest --test-dir "$build/$folder" --print-labels "${base[@]}" | sed -n 's/^  //p')
done

failed=0
for label in $(printf '%s\n' "${!labels[@]}" | sort); do
  n=$(count "$label")
  if [ -z "${minimum[$label]:-}" ]; then
    printf 'check-test-counts: %-7s %-12s %5d tests, no minimum: FAIL (add "%s %s %d" to %s)\n' \
      "$preset" "$label" "$n" "$preset" "$label" "$n" "$minimums"
    failed=1
  elif [ "$n" -lt "${minimum[$label]}" ]; then
    printf 'check-test-counts: %-7s %-12s %5d tests, minimum %5d: FAIL (%d missing)\n' \
      "$preset" "$label" "$n" "${minimum[$label]}" $((minimum[$label] - n))
    failed=1
  else
    printf 'check-test-counts: %-7s %-12s %5d tests, minimum %5d: ok\n' \
      "$preset" "$label" "$n" "${minimum[$label]}"
  fi
done
if [ "$failed" -ne 0 ]; then
  echo "check-test-counts: the ${preset} suite in ${build} is below ${minimums}" >&2
  exit 1
fi
