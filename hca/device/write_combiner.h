// Write combining for the responder's RDMA WRITE placement into another process.
//
// A 1 MiB RDMA WRITE arrives as 256 packets; placing each with its own process_vm_writev
// costs a page-table walk and a ptrace check per packet. The combiner stages the payload
// of consecutive packets of one message to contiguous addresses and places the run with
// one call, the way a CPU's write-combining buffer turns stores into bursts.
//
// Every staged byte passed its R_Key check when it arrived, so placing it later is legal
// as long as nothing changed the registration since; the HCA therefore flushes before any
// control operation, before any packet that does not continue the staged message, and at
// the message's last packet, before the ACK or completion that makes the data visible.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "hca/device/dma.h"

namespace softib::hca {

class WriteCombiner {
 public:
  // Bytes staged before a run is placed: 64 packets of 4 KiB.
  static constexpr std::size_t kCapacity = 256 * 1024;

  // Places `data` at `addr` of `dma` for QP `owner`: staged when it continues the staged
  // run (same owner and accessor, next address) or starts one; written at once when the
  // accessor does not combine or the data is larger than the buffer. False when the data
  // could not be placed now; a failure of an earlier run is reported by Flush.
  bool Write(uint32_t owner, const std::shared_ptr<DmaAccessor>& dma, uint64_t addr,
             std::span<const uint8_t> data);
  // Places the staged run. False if it could not be placed; `*failed_owner` is then the
  // QP it belonged to.
  bool Flush(uint32_t* failed_owner);
  bool pending() const { return !staged_.empty(); }
  uint32_t owner() const { return owner_; }
  uint64_t runs_placed() const { return runs_placed_; }

 private:
  std::shared_ptr<DmaAccessor> dma_;
  uint32_t owner_ = 0;
  uint64_t addr_ = 0;
  std::vector<uint8_t> staged_;
  uint64_t runs_placed_ = 0;
};

}  // namespace softib::hca
