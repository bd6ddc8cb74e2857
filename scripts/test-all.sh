#!/usr/bin/env bash
# Builds every preset that CI checks and runs every test in it.
#   default: everything (labels codegen, unit, conformance, interop, integration)
#   m32:     the user-side libraries and their tests, 32-bit
#   asan:    the whole suite under AddressSanitizer + UBSan
# then every libFuzzer target briefly (scripts/fuzz.sh; SOFTIB_FUZZ_SECONDS, default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${SOFTIB_JOBS:-2}
# m32 first: its 32-bit channel client is the peer of the 64-bit server in the
# default and asan integration tests (a 32-bit process against the 64-bit kernel).
presets=${SOFTIB_PRESETS:-"m32 default asan"}
m32_client="$PWD/build/m32/runtime/channel/channel_child_client"

for preset in $presets; do
  echo "=== softib: preset ${preset} ==="
  extra=()
  if [ "$preset" != m32 ] && [ -x "$m32_client" ]; then
    extra=(-DSOFTIB_M32_CHANNEL_CLIENT="$m32_client")
  fi
  cmake --preset "$preset" "${extra[@]}" >/dev/null
  cmake --build --preset "$preset" -j "$jobs"
  ctest --preset "$preset" -j "$jobs"
done
scripts/fuzz.sh "${SOFTIB_FUZZ_SECONDS:-10}"
echo "=== softib: all presets passed (${presets}) ==="
