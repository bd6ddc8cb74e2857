#!/usr/bin/env bash
# Installs everything softib needs to build and test on Debian 12, from Debian's
# own packages only. Run as root (CI and these machines are root).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

packages=(
  # toolchain and build
  build-essential g++ gcc-multilib g++-multilib cmake ninja-build clang-format
  # the linker of every preset (cmake/Linker.cmake)
  mold
  # tests: GoogleTest/GoogleMock sources (built per preset, also 32-bit)
  googletest
  # the m32 tests run under qemu-i386 (these kernels have no IA32 emulation)
  qemu-user
  # the generator: Debian's python3 with Jinja2
  python3 python3-jinja2
  # libraries
  libcli11-dev libfmt-dev nlohmann-json3-dev
  # fuzzing: clang with libFuzzer
  clang libclang-rt-14-dev
  # interop oracles
  tshark
  # the issue-4 interop oracles: OpenSM, ibsim (ibsim, ibsim-run, umad2sim),
  # infiniband-diags (ibnetdiscover, smpquery, saquery, ...) and libibumad
  opensm ibsim-utils infiniband-diags libibumad-dev
  # IPoIB (issue 18): network namespaces and TAP set-up (iproute2), and the unmodified
  # programs of the ipoib tests: ping, iperf3, socat, the DHCP server (dnsmasq-base: the
  # program without the system service) and clients (busybox udhcpc, isc-dhcp-client), ethtool
  iproute2 iputils-ping iperf3 socat dnsmasq-base busybox isc-dhcp-client ethtool
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "softib: installing ${missing[*]}"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "softib: all build and test dependencies are installed"
fi
