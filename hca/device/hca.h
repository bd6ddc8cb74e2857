// The software HCA's device core: the tables of its objects (PDs, MRs, AHs, CQs, QPs), its
// ports, and the transports that turn work requests into packets and packets into
// completions. The transport code is split by role, as Linux rxe splits it:
//   requester.cc  send queue → packets, RC retransmission and timers (PostSend, Tick)
//   responder.cc  requests → receive queue / memory, ACK/NAK/read responses (Receive)
//   completer.cc  RC ACKs and responses → work completions, flushing
//
// Threading: not synchronized. Its owner (the HCA driver) serializes calls into one Hca;
// the callbacks it supplies run inside those calls and must not re-enter the Hca.
// Time: none of its own; the owner calls Tick(now) to run the RC timers.
// Upward news (async events, completion events) leaves only through those callbacks.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "hca/device/ah.h"
#include "hca/device/cq.h"
#include "hca/device/events.h"
#include "hca/device/mr.h"
#include "hca/device/pd.h"
#include "hca/device/port.h"
#include "hca/device/qp.h"
#include "softib/abi/types.h"

namespace softib::hca {

struct HcaConfig {
  uint8_t num_ports = 1;
  uint64_t node_guid = 0x0002C90300000001ull;
  uint32_t max_cqes = 1u << 16;
  uint32_t max_wrs = 1u << 14;
  uint32_t max_sges = 16;  // abi::SendWorkRequest holds 16
  uint32_t max_inline = 16 * sizeof(abi::LocalDataSegment);
};

class Hca {
 public:
  explicit Hca(const HcaConfig& config = {});

  // Callbacks for upward news; set before use (empty ones drop the news).
  AsyncEventSink async_events;
  CompletionEventSink completion_events;

  Port& port(uint8_t number) { return ports_.at(number - 1); }
  const HcaConfig& config() const { return config_; }

  // --- objects -------------------------------------------------------------------------
  PdId AllocPd() { return pds_.Allocate(); }
  abi::Status FreePd(PdId pd);

  abi::Status RegisterMr(PdId pd, uint64_t iova, uint64_t length, uint64_t addr,
                         abi::AccessFlags access, std::shared_ptr<DmaAccessor> dma, uint32_t* key);
  abi::Status DeregisterMr(uint32_t key) { return mrs_.Deregister(key); }
  const MrTable& mrs() const { return mrs_; }

  abi::Status CreateAh(PdId pd, const abi::AddressVector& av, uint32_t* number);
  abi::Status DestroyAh(uint32_t number) { return ahs_.Destroy(number); }

  abi::Status CreateCq(uint32_t capacity, uint32_t* number);
  abi::Status DestroyCq(uint32_t number);
  CompletionQueue* Cq(uint32_t number);

  abi::Status CreateQp(PdId pd, const abi::QpCreateParams& params, uint32_t send_cq,
                       uint32_t recv_cq, uint32_t* qpn);
  abi::Status ModifyQp(uint32_t qpn, const abi::QpModifyAttributes& attrs);
  abi::Status QueryQp(uint32_t qpn, abi::QpAttributes* out) const;
  abi::Status DestroyQp(uint32_t qpn);
  QueuePair* Qp(uint32_t qpn);

  // --- data path (requester.cc, responder.cc) -------------------------------------------
  // UD: wr.av.value is the AH number. Immediate errors (bad QP state, too many SGEs, full
  // queue, wrong operation for the QP type) return a status and queue nothing; anything
  // found later completes the request with an error status.
  abi::Status PostSend(uint32_t qpn, const abi::SendWorkRequest& wr);
  abi::Status PostRecv(uint32_t qpn, const abi::RecvWorkRequest& wr);
  // A packet arrived on `port_number` (LRH through VCRC).
  void Receive(uint8_t port_number, std::span<const uint8_t> packet);

  // --- time -------------------------------------------------------------------------------
  // The HCA has no clock of its own: its owner advances time (nanoseconds, any origin)
  // and the RC timers that expired by then run inside this call (local ACK timeout,
  // RNR wait). Timers are armed relative to the last time given.
  void Tick(uint64_t now_ns);
  uint64_t now() const { return now_ns_; }

 private:
  // requester.cc
  void ProgressSend(QueuePair& qp);
  abi::WcStatus SendUd(QueuePair& qp, const abi::SendWorkRequest& wr, uint32_t* length);
  abi::WcStatus Gather(const QueuePair& qp, const abi::SendWorkRequest& wr,
                       std::vector<uint8_t>* payload);
  PacketHeaders PathHeaders(const Port& out, const abi::AddressVector& av) const;
  bool Transmit(Port& out, const PacketHeaders& hdr, std::span<const uint8_t> payload);
  // RC requester (requester.cc)
  abi::Status PostSendRc(QueuePair& qp, const abi::SendWorkRequest& wr);
  void ProgressSendRc(QueuePair& qp);
  abi::WcStatus StartRc(QueuePair& qp, RcSendWqe& wqe);
  abi::WcStatus ReadLocal(const QueuePair& qp, const abi::SendWorkRequest& wr, uint64_t offset,
                          std::span<uint8_t> out);
  void TransmitRc(QueuePair& qp, const RcSendWqe& wqe, uint32_t index);
  void RetransmitFrom(QueuePair& qp, uint32_t psn);
  void ArmAckTimer(QueuePair& qp);
  void RunRcTimers(QueuePair& qp);
  // responder.cc
  void ReceiveUd(Port& port, QueuePair& qp, const ParsedPacket& packet);
  void ReceiveRc(QueuePair& qp, const ParsedPacket& packet);
  void ReceiveRcDuplicate(QueuePair& qp, const ParsedPacket& packet);
  void ReceiveUc(QueuePair& qp, const ParsedPacket& packet);
  // Places one in-sequence SEND / RDMA WRITE packet; on failure, what to answer (RC NAK
  // code) and how the receive being filled completes.
  static constexpr uint8_t kPlaced = 0xFF;
  struct Placement {
    uint8_t nak_code;
    abi::WcStatus recv_status;
  };
  Placement PlacePacket(QueuePair& qp, const RequestShape& shape, const ParsedPacket& packet);
  // The last packet of a message was placed: count it, complete the receive it consumed.
  void FinishMessage(QueuePair& qp, const RequestShape& shape, const PacketHeaders& hdr);
  void RespondRead(QueuePair& qp, uint32_t psn, const wire::RETH& reth);
  void SendAck(QueuePair& qp, uint32_t psn, uint8_t syndrome);
  void SendAtomicAck(QueuePair& qp, uint32_t psn, uint64_t original);
  // A request the responder cannot execute: NAK it, complete the receive it was filling
  // (if any) with `recv_status`, and take the QP to Error (IBA 9.9.3.1 class C/D errors).
  void ResponderFatal(QueuePair& qp, uint32_t psn, uint8_t nak_code, abi::WcStatus recv_status);
  // completer.cc
  void CompleteSend(QueuePair& qp, const abi::SendWorkRequest& wr, abi::WcStatus status,
                    uint32_t length);
  void CompleteRecv(QueuePair& qp, abi::WorkCompletion wc, bool solicited);
  void EnterError(QueuePair& qp);    // QP to ERROR, outstanding work flushed
  void EnterSqError(QueuePair& qp);  // QP to SQE, outstanding sends flushed
  void Flush(QueuePair& qp);
  void FlushSend(QueuePair& qp);
  // RC completer: ACKs, NAKs, read responses and atomic ACKs retire send WQEs in order.
  void ReceiveRcResponse(QueuePair& qp, const ParsedPacket& packet);
  void ReceiveRcNak(QueuePair& qp, uint32_t psn, uint8_t syndrome);
  bool AcceptReadResponse(QueuePair& qp, RcSendWqe& wqe, const ParsedPacket& packet);
  void RetryFrom(QueuePair& qp, uint32_t psn);  // once per PSN until progress
  void RetireRc(QueuePair& qp);

  HcaConfig config_;
  std::vector<Port> ports_;
  PdTable pds_;
  MrTable mrs_;
  AhTable ahs_;
  std::map<uint32_t, std::unique_ptr<CompletionQueue>> cqs_;
  std::map<uint32_t, std::unique_ptr<QueuePair>> qps_;
  uint64_t now_ns_ = 0;
  uint32_t next_cq_ = 1;
  uint32_t next_qpn_ = 0x48;  // below: QP0/QP1 and numbers kept out of use, as on hardware
};

}  // namespace softib::hca
