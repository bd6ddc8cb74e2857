#!/usr/bin/env bash
# Builds every preset that CI checks and runs every test in it.
#   default: everything (labels codegen, unit, conformance, interop, integration)
#   m32:     the user-side libraries and their tests, 32-bit
#   asan:    the whole suite under AddressSanitizer + UBSan
# then every libFuzzer target briefly (scripts/fuzz.sh; SOFTIB_FUZZ_SECONDS, default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${SOFTIB_JOBS:-2}
presets=${SOFTIB_PRESETS:-"default m32 asan"}

for preset in $presets; do
  echo "=== softib: preset ${preset} ==="
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
scripts/fuzz.sh "${SOFTIB_FUZZ_SECONDS:-10}"
echo "=== softib: all presets passed (${presets}) ==="
