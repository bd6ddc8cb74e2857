// CRC offload (packet.h): sealing an unsealed packet, and the run option that forbids the
// offload (SOFTIB_FORCE_CRC=1: every packet sealed on the sending HCA and checked on the
// receiving one, as before the offload).
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "hca/device/packet.h"
#include "softib/wire/ib_crc.h"

namespace softib::hca {
namespace {

constexpr std::size_t kSealBytes = ibcrc::kIcrcBytes + ibcrc::kVcrcBytes;

// -1 until read from the environment; then 0 or 1.
std::atomic<int> force_crcs{-1};

}  // namespace

void SealPacket(std::vector<uint8_t>& packet) {
  if (packet.size() < kSealBytes) return;
  // AppendCrcs writes both CRCs after the bytes it covers: within the capacity the CRC
  // slots held, so nothing moves.
  packet.resize(packet.size() - kSealBytes);
  ibcrc::AppendCrcs(packet);
}

bool ForceCrcs() {
  int force = force_crcs.load(std::memory_order_relaxed);
  if (force < 0) {
    const char* value = std::getenv("SOFTIB_FORCE_CRC");
    force = value != nullptr && std::strcmp(value, "") != 0 && std::strcmp(value, "0") != 0;
    force_crcs.store(force, std::memory_order_relaxed);
  }
  return force != 0;
}

void SetForceCrcs(bool force) { force_crcs.store(force ? 1 : 0, std::memory_order_relaxed); }

}  // namespace softib::hca
