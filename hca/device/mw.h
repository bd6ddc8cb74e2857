// Memory windows (IBA 10.6.7): a remote-access view of part of a memory region, with its
// own R_Key and rights. Windows share the key table with regions (24-bit index, 8-bit key
// byte), so an R_Key names either. Type 1 windows are bound by the BindMw verb, each bind
// giving a new key byte; type 2 windows are bound by a BIND_MW work request that names the
// new key byte, are tied to that QP, and are freed again by LOCAL_INV or by a remote
// SEND_WITH_INVALIDATE.
#pragma once

#include <cstdint>

#include "hca/device/pd.h"
#include "softib/abi/types.h"

namespace softib::hca {

struct MemoryWindow {
  PdId pd = 0;
  abi::MwType type = abi::MwType::TYPE1;
  bool bound = false;  // type 2: false is the "free" state (after create or invalidate)
  uint32_t key = 0;    // the current R_Key
  uint32_t mr_key = 0;
  uint64_t va = 0, length = 0;
  abi::AccessFlags access{};
  uint32_t qp = 0;                // type 2: the QP handle it is bound to
  uint8_t promised_key_byte = 0;  // type 1: key byte of the last BindMw queued

  bool IsType2() const { return type != abi::MwType::TYPE1; }
  bool Contains(uint64_t at, uint64_t len) const {
    return at >= va && len <= length && at - va <= length - len;
  }
};

}  // namespace softib::hca
