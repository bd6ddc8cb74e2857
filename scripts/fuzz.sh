#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`, clang + ASan + UBSan) and shares TOTAL
# seconds (default 20; CI uses the default) among them, at least 1 s each, each starting
# from its committed seed corpus (tests/fuzz/corpus/<target>/, required for every target).
# A second argument fuzzes one target only, for all of TOTAL:
#   scripts/fuzz.sh 3600                     # an hour across every target
#   scripts/fuzz.sh 600 verbs_qp_fuzzer      # ten minutes on one
#   scripts/fuzz.sh --merge-seeds 60 [T]     # fuzz each target (or T) for 60 s, then merge
#                                            # what it found into its committed corpus
# Prints, per target, the executions, their rate and the corpus size; findings are written
# to build/fuzz/findings/ and fail the script.
set -euo pipefail
cd "$(dirname "$0")/.."
merge=0
if [ "${1:-}" = --merge-seeds ]; then
  merge=1
  shift
fi
total=${1:-20}
only=${2:-}
jobs=${SOFTIB_JOBS:-2}
seeds_root=tests/fuzz/corpus

cmake --preset fuzz >/dev/null
# Only the fuzzers and what they link: the rest of the tree is built and tested by the
# other presets (a whole clang+ASan build here cost CI minutes for nothing).
cmake --build --preset fuzz -j "$jobs" --target softib_fuzzers
findings=build/fuzz/findings
mkdir -p "$findings"
targets=()
for fuzzer in build/fuzz/tests/fuzz/*_fuzzer; do
  [ -x "$fuzzer" ] || continue
  if [ -z "$only" ] || [ "$(basename "$fuzzer")" = "$only" ]; then targets+=("$fuzzer"); fi
done
if [ ${#targets[@]} -eq 0 ]; then
  echo "softib fuzz: no target${only:+ named $only} in build/fuzz/tests/fuzz" >&2
  exit 2
fi
if [ "$merge" = 0 ]; then
  for fuzzer in "${targets[@]}"; do
    name=$(basename "$fuzzer")
    if ! compgen -G "$seeds_root/$name/*" >/dev/null; then
      echo "softib fuzz: ${name} has no committed seed corpus in ${seeds_root}/${name}" \
        "(tests/fuzz/make_seeds.py, or scripts/fuzz.sh --merge-seeds)" >&2
      exit 2
    fi
  done
fi
each=$((total / ${#targets[@]}))
[ "$each" -ge 1 ] || each=1
fuzz_stat() {  # fuzz_stat NAME LOG: a -print_final_stats=1 value
  sed -n "s/^stat::$1: *//p" "$2" | tail -n 1
}
summary=()
for fuzzer in "${targets[@]}"; do
  name=$(basename "$fuzzer")
  seeds="$seeds_root/$name"
  mkdir -p "$seeds"
  corpus=$(mktemp -d "/tmp/softib-${name}.XXXXXX")
  echo "=== fuzzing ${name} for ${each}s ==="
  status=0
  # The first directory is the one libFuzzer writes; the committed seeds are only read.
  "$fuzzer" -max_total_time="$each" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/${name}-" "$corpus" "$seeds" >"$corpus.log" 2>&1 || status=$?
  tail -n 6 "$corpus.log"
  runs=$(fuzz_stat number_of_executed_units "$corpus.log")
  rate=$(fuzz_stat average_exec_per_sec "$corpus.log")
  if [ "$status" -ne 0 ]; then
    rm -rf "$corpus" "$corpus.log"
    echo "softib fuzz: ${name} found a crash (exit ${status}); artifacts in ${findings}" >&2
    exit 1
  fi
  if [ "$merge" = 1 ]; then
    "$fuzzer" -merge=1 -rss_limit_mb=2048 "$seeds" "$corpus" >"$corpus.merge.log" 2>&1
    rm -f "$corpus.merge.log"
  fi
  summary+=("$(printf '%-26s %12s executions %8s/s  %5s seeds' "$name" "${runs:-?}" \
    "${rate:-?}" "$(find "$seeds" -type f | wc -l)")")
  rm -rf "$corpus" "$corpus.log"
done
echo "=== fuzzers found nothing (${#targets[@]} targets, ${each}s each) ==="
printf '  %s\n' "${summary[@]}"
