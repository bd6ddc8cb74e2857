// One side of a test: PD, a registered buffer, a CQ and a QP (RC, UC or UD) made through a
// Backend, brought to RTS towards the peer that the out-of-band exchange described.
//
// The buffer (one MR) is laid out the same way on both sides, from the plan:
//   [sink:   slots x slot_bytes]   receives land here; the peer's RDMA WRITEs and atomics
//                                  target slot 0; UD slots start with 40 bytes of GRH room
//   [source: source_bytes]         what this side sends and writes, what the peer reads;
//                                  atomic results land here, 8 bytes per request in flight
#pragma once

#include <cstdint>
#include <string>

#include "backend.h"
#include "oob.h"
#include "options.h"

namespace softib::perf {

struct BufferLayout {
  uint64_t slot_bytes = 0;  // one message (+ GRH room on UD), 64-byte aligned
  uint32_t slots = 0;       // receive slots
  uint64_t source_offset = 0;
  uint64_t source_bytes = 0;
  uint64_t total = 0;
  uint32_t grh_room = 0;  // 40 on UD

  static BufferLayout For(const TestPlan& plan);
  uint64_t sink(uint32_t slot) const { return static_cast<uint64_t>(slot % slots) * slot_bytes; }
};

// The receive queue's depth: rx_depth for send tests, else room for control messages.
uint32_t RecvQueueDepth(const TestPlan& plan);

class Endpoint {
 public:
  explicit Endpoint(Backend* backend) : backend_(backend) {}
  ~Endpoint();  // Destroy()

  // CQ, QP (RESET -> INIT), MR over a fresh page-aligned buffer, rings mapped.
  bool Create(const TestPlan& plan, uint8_t port, std::string* error);
  // What the peer needs (PSN chosen at random, as perftest does).
  PeerInfo LocalInfo() const;
  // INIT -> RTR -> RTS towards `peer` (UD: an address vector towards it).
  bool Connect(const PeerInfo& peer, std::string* error);
  // Connected by the CM instead: one transition with the attributes the CM derived
  // (CepGetRtrAttributes / CepGetRtsAttributes), and the peer's buffer from its private
  // data.
  bool Modify(const abi::QpModifyAttributes& attributes, const char* what, std::string* error);
  void set_peer(const PeerInfo& peer) { peer_ = peer; }
  abi::Handle<abi::ObjectType::Qp> qp() const { return qp_; }
  void Destroy();

  Backend& verbs() { return *backend_; }
  const BufferLayout& layout() const { return layout_; }
  uint8_t* buffer() const { return buffer_; }
  uint64_t address(uint64_t offset) const { return reinterpret_cast<uint64_t>(buffer_) + offset; }
  uint32_t lkey() const { return lkey_; }
  uint32_t qpn() const { return qpn_; }
  Transport transport() const { return transport_; }
  const PeerInfo& peer() const { return peer_; }
  abi::Handle<abi::ObjectType::Av> av() const { return av_; }

  static constexpr uint32_t kQkey = 0x11111111;

 private:
  bool Check(Status status, const char* what, std::string* error);

  Backend* backend_;
  Transport transport_ = Transport::kRc;
  uint8_t port_ = 1;
  BufferLayout layout_;
  uint8_t* buffer_ = nullptr;
  abi::Handle<abi::ObjectType::Pd> pd_{};
  abi::Handle<abi::ObjectType::Cq> cq_{};
  abi::Handle<abi::ObjectType::Qp> qp_{};
  abi::Handle<abi::ObjectType::Mr> mr_{};
  abi::Handle<abi::ObjectType::Av> av_{};
  uint32_t lkey_ = 0, rkey_ = 0, qpn_ = 0, psn_ = 0;
  uint16_t lid_ = 0;
  PeerInfo peer_{};
};

}  // namespace softib::perf
