#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`, clang + ASan + UBSan) and shares TOTAL
# seconds (default 20; CI uses the default) among them, at least 1 s each. A second
# argument fuzzes one target only, for all of TOTAL:
#   scripts/fuzz.sh 3600                     # an hour across every target
#   scripts/fuzz.sh 600 verbs_qp_fuzzer      # ten minutes on one
# Findings are written to build/fuzz/findings/ and fail the script.
set -euo pipefail
cd "$(dirname "$0")/.."
total=${1:-20}
only=${2:-}
jobs=${SOFTIB_JOBS:-2}

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
each=$((total / ${#targets[@]}))
[ "$each" -ge 1 ] || each=1
for fuzzer in "${targets[@]}"; do
  name=$(basename "$fuzzer")
  corpus=$(mktemp -d "/tmp/softib-${name}.XXXXXX")
  echo "=== fuzzing ${name} for ${each}s ==="
  status=0
  "$fuzzer" -max_total_time="$each" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/${name}-" "$corpus" >"$corpus.log" 2>&1 || status=$?
  tail -n 6 "$corpus.log"
  rm -rf "$corpus" "$corpus.log"
  if [ "$status" -ne 0 ]; then
    echo "softib fuzz: ${name} found a crash (exit ${status}); artifacts in ${findings}" >&2
    exit 1
  fi
done
echo "=== fuzzers found nothing (${#targets[@]} targets, ${each}s each) ==="
