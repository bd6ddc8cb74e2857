// One side of an RC connection made the way a user program does it: PD, CQ and QP on an
// open CA through the generated proxies, rings mapped for the speed path, ModifyQp
// RESET→INIT→RTR→RTS. Shared by softib_verbs_client and the integration tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "softib/abi/types.h"
#include "softib/user/access_layer.h"
#include "softib/user/mapped_rings.h"

namespace softib::integration {

using user::Status;

struct RcTimers {
  uint8_t timeout = 14;  // local ACK timeout, 4.096 us * 2^timeout
  uint8_t retry_count = 7;
  uint8_t rnr_retry = 7;  // forever
};

class RcEndpoint {
 public:
  // CQ and RC QP; the PD is the caller's (several endpoints may share one).
  Status Create(const user::CaFile& ca, abi::Handle<abi::ObjectType::Pd> pd, uint32_t depth);
  // Maps the CQ's and the QP's rings (MapCqRing, MapQpRings): the speed path's
  // PostSend/PostRecv/PollOne work from then on.
  Status MapRings();
  // RESET→INIT on port 1 (receives may be posted from then on).
  Status Init();
  // (RESET→)INIT→RTR→RTS towards (remote_lid, remote_qpn) on port 1; PSNs fixed so that both
  // sides agree without exchanging them.
  Status Connect(uint16_t remote_lid, uint32_t remote_qpn, const RcTimers& timers = {});
  // Any transition, e.g. to RTR/RTS with the attributes a CEP reports.
  Status Modify(abi::QpModifyAttributes attributes);
  // Destroys the QP, then the CQ (the rings are unmapped with this object).
  Status Destroy();

  Status PostSend(const abi::SendWorkRequest& wr);
  Status PostRecv(const abi::RecvWorkRequest& wr);
  // Polls until one completion arrives or `limit` passes (TIMEOUT).
  Status PollOne(abi::WorkCompletion* wc, std::chrono::milliseconds limit);
  // The QP's state as the kernel reports it.
  Status QueryState(abi::QpState* state);

  uint32_t qpn() const { return qpn_; }
  abi::Handle<abi::ObjectType::Qp> qp() const { return qp_; }
  abi::Handle<abi::ObjectType::Cq> cq() const { return cq_; }

 private:
  user::DeviceHandle device_ = nullptr;
  abi::Handle<abi::ObjectType::Cq> cq_{};
  abi::Handle<abi::ObjectType::Qp> qp_{};
  uint32_t qpn_ = 0;
  bool initialized_ = false;
  user::MappedCq cq_ring_;
  user::MappedQp qp_rings_;
};

inline constexpr uint32_t kStartPsn = 0x1000;

// A CQ of 2 x depth entries and a QP of `type` on it (both queues `depth` deep, one SGE).
Status CreateCqAndQp(const user::CaFile& ca, abi::Handle<abi::ObjectType::Pd> pd, abi::QpType type,
                     uint32_t depth, abi::Handle<abi::ObjectType::Cq>* cq,
                     abi::Handle<abi::ObjectType::Qp>* qp, uint32_t* qpn);

// Polls `cq` until one completion arrives or `deadline` passes (TIMEOUT).
Status PollCqOne(user::MappedCq& cq, abi::WorkCompletion* wc,
                 std::chrono::steady_clock::time_point deadline);

// Allocates a PD on `ca`.
Status AllocPd(const user::CaFile& ca, abi::Handle<abi::ObjectType::Pd>* pd);
// Registers [buffer, buffer+length) of this process.
Status RegisterBuffer(const user::CaFile& ca, abi::Handle<abi::ObjectType::Pd> pd, void* buffer,
                      uint64_t length, abi::AccessFlags access,
                      abi::Handle<abi::ObjectType::Mr>* mr, uint32_t* lkey, uint32_t* rkey);
// Port 1's LID of `ca` (QueryCa).
Status PortLid(const user::CaFile& ca, uint16_t* lid, uint8_t* link_state);

// A signaled work request over one local segment.
abi::SendWorkRequest SendWr(uint64_t wr_id, abi::WrType type, const void* buffer, uint32_t length,
                            uint32_t lkey);
abi::RecvWorkRequest RecvWr(uint64_t wr_id, void* buffer, uint32_t length, uint32_t lkey);

// Network order of a host-order value (the IDL's "network order" fields).
uint64_t HostToNet64(uint64_t value);
uint32_t HostToNet32(uint32_t value);

}  // namespace softib::integration
