// Two one-port HCAs cabled back to back, each with an RC (or UC) QP brought up through
// RESET→INIT→RTR→RTS with real attributes and connected to the other, memory registered
// over a local buffer, and a shared fake clock the tests advance.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "hca/device/hca.h"

namespace softib::hca::testing {

struct RcOptions {
  abi::QpType type = abi::QpType::RC;  // or UC: same set-up without the RC-only attributes
  abi::PathMtu mtu = abi::PathMtu::MTU_1024;
  uint8_t timeout = 10;  // 4.096 µs · 2^10 ≈ 4.2 ms
  uint8_t retry_count = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  // 10 µs
  uint8_t max_rd_atomic = 4;
  uint32_t a_psn = 0xFFFFF0;  // near the wrap, so the 24-bit arithmetic is exercised
  uint32_t b_psn = 0x000123;
  bool sq_signaled = true;
  uint32_t sq_depth = 128, rq_depth = 128;
  abi::AccessFlags qp_access = abi::AccessFlags::REMOTE_WRITE | abi::AccessFlags::REMOTE_READ |
                               abi::AccessFlags::REMOTE_ATOMIC;
  std::size_t buffer_bytes = 1 << 20;
  uint32_t b_srq_depth = 0;  // non-zero: b's QP receives from an SRQ of this depth
};

struct RcSide {
  Hca hca;
  PdId pd = 0;
  uint32_t cq = 0, qpn = 0, key = 0, srq = 0;
  std::vector<uint8_t> buffer;
  uint64_t addr(uint64_t offset = 0) const {
    return reinterpret_cast<uint64_t>(buffer.data()) + offset;
  }
  QueuePair& qp() { return *hca.Qp(qpn); }
};

inline abi::QpModifyAttributes RcToState(abi::QpState state, abi::QpAttrMask extra = {}) {
  abi::QpModifyAttributes a{};
  a.mask = abi::QpAttrMask::STATE | extra;
  a.state = state;
  return a;
}

class RcPair {
 public:
  explicit RcPair(const RcOptions& options = {}) : options_(options) {
    Create(a, 1, 0);
    Create(b, 2, options.b_srq_depth);
    Connect(a, b, 2, options.a_psn, options.b_psn);
    Connect(b, a, 1, options.b_psn, options.a_psn);
    a.hca.port(1).link = &cable.end(0);
    b.hca.port(1).link = &cable.end(1);
    cable.Attach(0, [this](std::span<const uint8_t> p) { a.hca.Receive(1, p); });
    cable.Attach(1, [this](std::span<const uint8_t> p) { b.hca.Receive(1, p); });
  }

  abi::SendWorkRequest Wr(abi::WrType type, uint64_t local_offset, uint32_t length,
                          uint64_t remote_offset = 0, uint64_t wr_id = 1) {
    abi::SendWorkRequest wr{};
    wr.wr_id = wr_id;
    wr.wr_type = type;
    wr.num_sge = 1;
    wr.sge[0] = {a.addr(local_offset), length, a.key};
    wr.rkey = b.key;
    wr.remote_addr = b.addr(remote_offset);
    return wr;
  }
  abi::RecvWorkRequest Recv(uint64_t offset, uint32_t length, uint64_t wr_id = 2) {
    abi::RecvWorkRequest wr{};
    wr.wr_id = wr_id;
    wr.num_sge = 1;
    wr.sge[0] = {b.addr(offset), length, b.key};
    return wr;
  }
  std::vector<abi::WorkCompletion> Poll(RcSide& s) {
    std::vector<abi::WorkCompletion> out(256);
    out.resize(s.hca.Cq(s.cq)->Poll(out));
    return out;
  }

  // Advances the shared clock by `ns` and lets both HCAs run their timers.
  void Advance(uint64_t ns) {
    now += ns;
    a.hca.Tick(now);
    b.hca.Tick(now);
  }
  // Delivers packets and advances time (1 ms steps) until neither send queue holds work,
  // at most `max_steps` steps; true when they drained.
  bool Run(int max_steps = 2000) {
    for (int i = 0; i < max_steps; ++i) {
      cable.Pump();
      if (a.qp().rc.req.wqes.empty() && b.qp().rc.req.wqes.empty()) return true;
      Advance(1'000'000);
    }
    return false;
  }

  BackToBackCable cable;
  RcSide a, b;
  uint64_t now = 0;

 private:
  void Create(RcSide& s, uint16_t lid, uint32_t srq_depth) {
    s.hca.port(1).lid = lid;
    s.buffer.assign(options_.buffer_bytes, 0);
    s.pd = s.hca.AllocPd();
    ASSERT_EQ(s.hca.CreateCq(4096, &s.cq), abi::Status::SUCCESS);
    abi::QpCreateParams params{};
    params.qp_type = options_.type;
    params.sq_signaled = options_.sq_signaled ? 1 : 0;
    params.caps = {options_.sq_depth, srq_depth != 0 ? 0 : options_.rq_depth, 4, 4, 64, 0};
    if (srq_depth != 0) {
      ASSERT_EQ(s.hca.CreateSrq(s.pd, {srq_depth, 4, 0, 0}, &s.srq, nullptr), abi::Status::SUCCESS);
    }
    ASSERT_EQ(s.hca.CreateQp(s.pd, params, s.cq, s.cq, s.srq, &s.qpn), abi::Status::SUCCESS);
    ASSERT_EQ(s.hca.RegisterMr(s.pd, s.addr(), s.buffer.size(), s.addr(),
                               abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE |
                                   abi::AccessFlags::REMOTE_READ | abi::AccessFlags::REMOTE_ATOMIC,
                               std::make_shared<MemcpyDma>(), &s.key),
              abi::Status::SUCCESS);
  }

  void Connect(RcSide& s, const RcSide& peer, uint16_t peer_lid, uint32_t sq_psn, uint32_t rq_psn) {
    using M = abi::QpAttrMask;
    abi::QpModifyAttributes init =
        RcToState(abi::QpState::INIT, M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS);
    init.port_num = 1;
    init.access_flags = options_.qp_access;
    ASSERT_EQ(s.hca.ModifyQp(s.qpn, init), abi::Status::SUCCESS);
    const bool rc = options_.type == abi::QpType::RC;
    abi::QpModifyAttributes rtr =
        RcToState(abi::QpState::RTR, M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN |
                                         (rc ? M::MAX_DEST_RD_ATOMIC | M::MIN_RNR_TIMER : M{}));
    rtr.av.port_num = 1;
    rtr.av.dlid = peer_lid;
    rtr.path_mtu = static_cast<uint8_t>(options_.mtu);
    rtr.dest_qpn = peer.qpn;
    rtr.rq_psn = rq_psn;
    rtr.max_dest_rd_atomic = 4;
    rtr.min_rnr_timer = options_.min_rnr_timer;
    ASSERT_EQ(s.hca.ModifyQp(s.qpn, rtr), abi::Status::SUCCESS);
    abi::QpModifyAttributes rts = RcToState(
        abi::QpState::RTS,
        M::SQ_PSN | (rc ? M::TIMEOUT | M::RETRY_COUNT | M::RNR_RETRY | M::MAX_RD_ATOMIC : M{}));
    rts.sq_psn = sq_psn;
    rts.timeout = options_.timeout;
    rts.retry_count = options_.retry_count;
    rts.rnr_retry = options_.rnr_retry;
    rts.max_rd_atomic = options_.max_rd_atomic;
    ASSERT_EQ(s.hca.ModifyQp(s.qpn, rts), abi::Status::SUCCESS);
  }

  RcOptions options_;
};

inline void Fill(std::vector<uint8_t>& buffer, uint64_t offset, uint32_t length, uint32_t seed) {
  for (uint32_t i = 0; i < length; ++i)
    buffer[offset + i] = static_cast<uint8_t>((seed * 131 + i * 7 + (i >> 8)) & 0xFF);
}
inline bool Matches(const std::vector<uint8_t>& buffer, uint64_t offset, uint32_t length,
                    uint32_t seed) {
  for (uint32_t i = 0; i < length; ++i)
    if (buffer[offset + i] != static_cast<uint8_t>((seed * 131 + i * 7 + (i >> 8)) & 0xFF))
      return false;
  return true;
}

}  // namespace softib::hca::testing
