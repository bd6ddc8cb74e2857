// The neighbour table: one entry per remote endpoint (QPN + GID), each with the MAC the host
// sees for it.
#include <algorithm>

#include "packet_bytes.h"
#include "softib/ipoib/translate.h"

namespace softib::ipoib {

Neighbour* NeighbourTable::Learn(const HwAddr& hw, uint16_t lid) {
  if (Neighbour* known = FindByHw(hw)) {
    known->hw.flags = hw.flags;  // 'C' follows what the peer announces now
    if (lid != 0) known->lid = lid;
    return known;
  }
  Neighbour entry;
  entry.hw = hw;
  entry.hw.qpn &= 0xFFFFFF;
  entry.lid = lid;
  // The derived MAC, or the next derivation while another endpoint holds it, so one MAC
  // always names one endpoint.
  // After kMaxAttempts taken candidates (not with DeriveMac's 46 bits) the address is not
  // learnt: nullptr.
  constexpr uint32_t kMaxAttempts = 64;
  uint32_t attempt = 0;
  for (; attempt < kMaxAttempts; ++attempt) {
    entry.mac = derive_(entry.hw, attempt);
    if (FindByMac(entry.mac) == nullptr) break;
  }
  if (attempt == kMaxAttempts) return nullptr;
  entries_.push_back(entry);
  return &entries_.back();
}

Neighbour* NeighbourTable::FindByMac(const Mac& mac) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Neighbour& n) { return n.mac == mac; });
  return it == entries_.end() ? nullptr : &*it;
}

Neighbour* NeighbourTable::FindByHw(const HwAddr& hw) {
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Neighbour& n) {
    return n.hw.qpn == (hw.qpn & 0xFFFFFF) && n.hw.gid == hw.gid;
  });
  return it == entries_.end() ? nullptr : &*it;
}

Neighbour* NeighbourTable::FindBySource(uint16_t slid, uint32_t qpn) {
  if (slid == 0) return nullptr;
  auto it = std::find_if(entries_.begin(), entries_.end(), [&](const Neighbour& n) {
    return n.lid == slid && n.hw.qpn == (qpn & 0xFFFFFF);
  });
  return it == entries_.end() ? nullptr : &*it;
}

void NeighbourTable::Forget(const Mac& mac) {
  std::erase_if(entries_, [&](const Neighbour& n) { return n.mac == mac; });
}

void NeighbourTable::Clear() { entries_.clear(); }

std::vector<Neighbour> NeighbourTable::Snapshot() const { return entries_; }

}  // namespace softib::ipoib
