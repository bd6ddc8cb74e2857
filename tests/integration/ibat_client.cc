// A user process of IBAT (softib/user/ibat.h), built in the 64-bit and the m32 tree: the
// 32-bit one proves a 32-bit process reaches the IPoIB driver's IBAT device with the one
// ABI layout (tests/ipoib/ipoib_ibat_test.sh runs it).
//   softib_ibat_client RUN_DIR ADDRESS
// Resolves ADDRESS (asking again while PENDING, at most ~5 s) and prints
//   dgid <gid> qpn <qpn> dlid <dlid>
// exit 0; otherwise the status name on stderr, exit 1.
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <thread>

#include "softib/user/ibat.h"

int main(int argc, char** argv) {
  using softib::user::Status;
  if (argc != 3) {
    std::fprintf(stderr, "usage: softib_ibat_client RUN_DIR ADDRESS\n");
    return 2;
  }
  softib::abi::IbatIpAddress local{}, remote{};
  if (!softib::user::ParseIbatIp(argv[2], &remote)) {
    std::fprintf(stderr, "not an address: %s\n", argv[2]);
    return 2;
  }
  local.family = remote.family;
  softib::user::DeviceHandle device = nullptr;
  Status s = softib::user::OpenIbat(argv[1], &device);
  if (s != Status::SUCCESS) {
    std::fprintf(stderr, "OpenIbat: %s\n", softib::abi::ToString(s));
    return 1;
  }
  softib::abi::IbatResolveOut path{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    s = softib::user::IbatResolve(device, local, remote, &path);
    if (s != Status::PENDING) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the driver said: ask again
  } while (std::chrono::steady_clock::now() < deadline);
  softib::user::CloseDevice(device);
  if (s != Status::SUCCESS) {
    std::fprintf(stderr, "IbatResolve: %s\n", softib::abi::ToString(s));
    return 1;
  }
  const uint8_t* pr = path.path_record;  // DLID: PathRecord bytes 40..41, big-endian
  std::printf("dgid");
  for (int i = 0; i < 16; i += 2) {
    std::printf("%s%02x%02x", i == 0 ? " " : ":", path.dgid.raw[i], path.dgid.raw[i + 1]);
  }
  std::printf(" qpn 0x%06" PRIx32 " dlid %u\n", path.remote_qpn,
              static_cast<unsigned>(pr[40] << 8 | pr[41]));
  return 0;
}
