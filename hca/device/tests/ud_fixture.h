// Two one-port HCAs cabled back to back, each with a PD, CQs, a UD QP in RTS and memory
// registered over a local buffer.
#pragma once

#include <endian.h>

#include <array>
#include <cstring>
#include <vector>

#include "hca/device/hca.h"

namespace softib::hca::testing {

inline constexpr uint32_t kQkey = 0x11223344;

struct Side {
  Hca hca;
  PdId pd = 0;
  uint32_t cq = 0, qpn = 0, key = 0, ah = 0;
  std::array<uint8_t, 8192> buffer{};
  uint64_t addr() const { return reinterpret_cast<uint64_t>(buffer.data()); }
};

inline abi::QpModifyAttributes ToState(abi::QpState state, abi::QpAttrMask extra = {}) {
  abi::QpModifyAttributes a{};
  a.mask = abi::QpAttrMask::STATE | extra;
  a.state = state;
  return a;
}

inline void BringUp(Side& s, uint16_t lid, abi::AccessFlags access) {
  s.hca.port(1).lid = lid;
  s.pd = s.hca.AllocPd();
  ASSERT_EQ(s.hca.CreateCq(64, &s.cq), abi::Status::SUCCESS);
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::UD;
  params.sq_signaled = 1;
  params.caps = {16, 16, 4, 4, 64, 0};
  ASSERT_EQ(s.hca.CreateQp(s.pd, params, s.cq, s.cq, &s.qpn), abi::Status::SUCCESS);
  abi::QpModifyAttributes init =
      ToState(abi::QpState::INIT,
              abi::QpAttrMask::PKEY_INDEX | abi::QpAttrMask::PORT | abi::QpAttrMask::QKEY);
  init.port_num = 1;
  init.qkey = htobe32(kQkey);
  ASSERT_EQ(s.hca.ModifyQp(s.qpn, init), abi::Status::SUCCESS);
  ASSERT_EQ(s.hca.ModifyQp(s.qpn, ToState(abi::QpState::RTR)), abi::Status::SUCCESS);
  ASSERT_EQ(s.hca.ModifyQp(s.qpn, ToState(abi::QpState::RTS, abi::QpAttrMask::SQ_PSN)),
            abi::Status::SUCCESS);
  ASSERT_EQ(s.hca.RegisterMr(s.pd, s.addr(), s.buffer.size(), s.addr(), access,
                             std::make_shared<MemcpyDma>(), &s.key),
            abi::Status::SUCCESS);
}

class UdPair {
 public:
  UdPair(abi::AccessFlags b_access = abi::AccessFlags::LOCAL_WRITE) {
    BringUp(a, 1, abi::AccessFlags::LOCAL_WRITE);
    BringUp(b, 2, b_access);
    a.hca.port(1).link = &cable.end(0);
    b.hca.port(1).link = &cable.end(1);
    cable.Attach(0, [this](std::span<const uint8_t> p) { a.hca.Receive(1, p); });
    cable.Attach(1, [this](std::span<const uint8_t> p) { b.hca.Receive(1, p); });
    abi::AddressVector av{};
    av.port_num = 1;
    av.dlid = 2;
    EXPECT_EQ(a.hca.CreateAh(a.pd, av, &a.ah), abi::Status::SUCCESS);
  }

  abi::SendWorkRequest Send(uint64_t offset, uint32_t length, uint32_t qkey = kQkey) {
    abi::SendWorkRequest wr{};
    wr.wr_id = 100;
    wr.wr_type = abi::WrType::SEND;
    wr.num_sge = 1;
    wr.sge[0] = {a.addr() + offset, length, a.key};
    wr.av.value = a.ah;
    wr.remote_qpn = b.qpn;
    wr.remote_qkey = qkey;
    return wr;
  }
  abi::RecvWorkRequest Recv(uint64_t offset, uint32_t length) {
    abi::RecvWorkRequest wr{};
    wr.wr_id = 200;
    wr.num_sge = 1;
    wr.sge[0] = {b.addr() + offset, length, b.key};
    return wr;
  }
  std::vector<abi::WorkCompletion> Poll(Side& s) {
    std::vector<abi::WorkCompletion> out(64);
    out.resize(s.hca.Cq(s.cq)->Poll(out));
    return out;
  }

  BackToBackCable cable;
  Side a, b;
};

}  // namespace softib::hca::testing
