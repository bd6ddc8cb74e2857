#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `fuzz`, clang + ASan + UBSan) and runs each
# for SECONDS seconds (default 10; CI uses the default). Findings are written to
# build/fuzz/findings/ and fail the script.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-10}
jobs=${SOFTIB_JOBS:-2}

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$jobs"
findings=build/fuzz/findings
mkdir -p "$findings"
for fuzzer in build/fuzz/tests/fuzz/*_fuzzer; do
  name=$(basename "$fuzzer")
  corpus=$(mktemp -d "/tmp/softib-${name}.XXXXXX")
  echo "=== fuzzing ${name} for ${seconds}s ==="
  "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$findings/${name}-" "$corpus" 2>&1 | tail -n 12
  rm -rf "$corpus"
done
echo "=== fuzzers found nothing ==="
