#!/usr/bin/env bash
# Builds every preset that CI checks and runs every test in it.
#   m32:     the user-side libraries, their tests and the 32-bit clients
#   asan:    everything, the whole suite (labels codegen, unit, conformance, interop,
#            integration, bench) under AddressSanitizer + UBSan, then the README's main
#            job (scripts/main-job.sh) on the same binaries
#   tsan:    the runtime and HCA folders under ThreadSanitizer (not runtime/codec: no threads)
# then every libFuzzer target briefly (scripts/fuzz.sh; SOFTIB_FUZZ_SECONDS in total,
# default 20). Not in CI's list, for SOFTIB_PRESETS: `default` (everything at -O2 and the
# whole suite, as developers build it: the asan phase runs the same tests) and `main` (the
# main job on the default preset, as the README's first command runs it).
# Every preset builds in unity batches (CMakePresets.json): CI's time is mostly compiling.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${SOFTIB_JOBS:-2}
# Marks every process the tests start (they inherit it): check-no-leftovers.sh finds them.
export SOFTIB_TEST_RUN=${SOFTIB_TEST_RUN:-test-all.$$.$(date +%s)}
# m32 first: its 32-bit clients are the peers of the 64-bit servers in the default and
# asan integration tests (a 32-bit process against the 64-bit kernel).
presets=${SOFTIB_PRESETS:-"m32 asan tsan"}
m32_channel_client="$PWD/build/m32/runtime/channel/channel_child_client"
m32_verbs_client="$PWD/build/m32/tests/integration/softib_verbs_client"
# What the tsan preset builds and runs: the runtime's and the HCA's folders (those that
# exist in this tree: optional folders join the build as they are written).
# runtime/codec is left out: pure data transformations, no threads (its tests run in m32 and
# asan).
tsan_candidates="runtime/kernel runtime/channel runtime/bridge runtime/user runtime/al
  runtime/bus runtime/stack hca hca/rings hca/uvp"

phase_times=()
for preset in $presets; do
  echo "=== softib: preset ${preset} ==="
  phase_start=$SECONDS
  if [ "$preset" = main ]; then
    SOFTIB_JOBS=$jobs scripts/main-job.sh
    phase_times+=("main job (default preset): $((SECONDS - phase_start)) s")
    echo "=== softib: ${phase_times[-1]} ==="
    continue
  fi
  extra=()
  if [ "$preset" != m32 ]; then
    [ -x "$m32_channel_client" ] && extra+=(-DSOFTIB_M32_CHANNEL_CLIENT="$m32_channel_client")
    [ -x "$m32_verbs_client" ] && extra+=(-DSOFTIB_M32_VERBS_CLIENT="$m32_verbs_client")
  fi
  cmake --preset "$preset" "${extra[@]}" >/dev/null
  if [ "$preset" = tsan ]; then
    tsan_folders=()
    for folder in $tsan_candidates; do
      [ -f "build/tsan/$folder/CTestTestfile.cmake" ] && tsan_folders+=("$folder")
    done
    targets=()
    for folder in "${tsan_folders[@]}"; do targets+=("$folder/all"); done
    cmake --build --preset "$preset" -j "$jobs" --target "${targets[@]}"
    for folder in "${tsan_folders[@]}"; do
      ctest --test-dir "build/tsan/$folder" -j "$jobs" --output-on-failure
    done
  else
    cmake --build --preset "$preset" -j "$jobs"
    build_done=$SECONDS
    ctest --preset "$preset" -j "$jobs"
    phase_times+=("${preset}: build $((build_done - phase_start)) s, tests $((SECONDS - build_done)) s")
    echo "=== softib: ${phase_times[-1]} ==="
    if [ "$preset" = asan ]; then
      main_start=$SECONDS
      # The asan test preset's sanitizer options (CMakePresets.json), for the job's programs.
      ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:verify_asan_link_order=0:suppressions=$PWD/tests/asan.supp" \
        LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" \
        UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
        SOFTIB_JOBS=$jobs SOFTIB_BUILD_DIR=build/asan scripts/main-job.sh
      phase_times+=("main job (asan build): $((SECONDS - main_start)) s")
      echo "=== softib: ${phase_times[-1]} ==="
    fi
    continue
  fi
  phase_times+=("${preset}: $((SECONDS - phase_start)) s")
  echo "=== softib: ${phase_times[-1]} ==="
done
phase_start=$SECONDS
scripts/fuzz.sh "${SOFTIB_FUZZ_SECONDS:-20}"
phase_times+=("fuzz: $((SECONDS - phase_start)) s")
# No softibd, ibsim, SM or test client may outlive the tests.
scripts/check-no-leftovers.sh
echo "=== softib: all presets passed (${presets}) ==="
# Where CI's time goes (the whole run must stay well under 30 minutes on 2 CPUs).
printf '  %s\n' "${phase_times[@]}"
