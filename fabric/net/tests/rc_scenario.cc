#include "rc_scenario.h"

#include <gtest/gtest.h>

namespace softib::fabric::testing {

namespace {

abi::Status Open(hca::Hca& hca, RcEndpoint& e, std::size_t bytes) {
  e.buffer.assign(bytes, 0);
  e.pd = hca.AllocPd();
  if (const abi::Status s = hca.CreateCq(8192, &e.cq); s != abi::Status::SUCCESS) return s;
  abi::QpCreateParams params{};
  params.qp_type = abi::QpType::RC;
  params.sq_signaled = 1;
  params.caps = {512, 512, 1, 1, 0, 0};
  if (const abi::Status s = hca.CreateQp(e.pd, params, e.cq, e.cq, 0, &e.qpn);
      s != abi::Status::SUCCESS)
    return s;
  return hca.RegisterMr(e.pd, e.addr(), bytes, e.addr(),
                        abi::AccessFlags::LOCAL_WRITE | abi::AccessFlags::REMOTE_WRITE,
                        std::make_shared<hca::MemcpyDma>(), &e.key);
}

abi::Status Connect(hca::Hca& hca, const RcEndpoint& e, uint16_t peer_lid, uint32_t peer_qpn,
                    uint32_t sq_psn, uint32_t rq_psn) {
  using M = abi::QpAttrMask;
  abi::QpModifyAttributes a{};
  a.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
  a.state = abi::QpState::INIT;
  a.port_num = 1;
  a.access_flags = abi::AccessFlags::REMOTE_WRITE;
  if (const abi::Status s = hca.ModifyQp(e.qpn, a); s != abi::Status::SUCCESS) return s;
  a = {};
  a.mask = M::STATE | M::AV | M::PATH_MTU | M::DEST_QPN | M::RQ_PSN | M::MAX_DEST_RD_ATOMIC |
           M::MIN_RNR_TIMER;
  a.state = abi::QpState::RTR;
  a.av.port_num = 1;
  a.av.dlid = peer_lid;
  a.path_mtu = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
  a.dest_qpn = peer_qpn;
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 1;
  if (const abi::Status s = hca.ModifyQp(e.qpn, a); s != abi::Status::SUCCESS) return s;
  a = {};
  a.mask = M::STATE | M::SQ_PSN | M::TIMEOUT | M::RETRY_COUNT | M::RNR_RETRY | M::MAX_RD_ATOMIC;
  a.state = abi::QpState::RTS;
  a.sq_psn = sq_psn;
  a.timeout = 10;  // 4.2 ms of the fake clock
  a.retry_count = 7;
  a.rnr_retry = 7;
  a.max_rd_atomic = 1;
  return hca.ModifyQp(e.qpn, a);
}

uint8_t PatternByte(uint32_t message, uint32_t i) {
  return static_cast<uint8_t>(message * 31 + i * 7 + 1);
}
uint32_t LengthOf(uint32_t message) { return 1 + (message * 977) % 3000; }

}  // namespace

RcOverSwitches::RcOverSwitches(uint32_t seed) : fabric(seed) {
  for (uint64_t i = 0; i < 2; ++i) {
    SwitchConfig config;
    config.node_guid = 0x0002c90300001000ull + i;
    config.num_ports = 4;
    config.description = "switch-" + std::to_string(i);
    fabric.AddSwitch(config);
  }
  a = AddHost(fabric, kLidA);
  b = AddHost(fabric, kLidB);
  using K = CableEnd::Kind;
  cables[0] = fabric.Connect({K::kCaPort, a->ca_port, 0}, {K::kSwitch, 0, 1});
  cables[1] = fabric.Connect({K::kSwitch, 0, 2}, {K::kSwitch, 1, 2});
  cables[2] = fabric.Connect({K::kSwitch, 1, 1}, {K::kCaPort, b->ca_port, 0});
  testing::ProgramLft(fabric.switch_at(0), {{kLidA, 1}, {kLidB, 2}});
  testing::ProgramLft(fabric.switch_at(1), {{kLidA, 2}, {kLidB, 1}});
  testing::ActivatePorts(fabric.switch_at(0));
  testing::ActivatePorts(fabric.switch_at(1));
  EXPECT_EQ(Open(a->hca, ea, 1 << 20), abi::Status::SUCCESS);
  EXPECT_EQ(Open(b->hca, eb, 1 << 20), abi::Status::SUCCESS);
  EXPECT_EQ(Connect(a->hca, ea, kLidB, eb.qpn, 0xFFFF00, 0x000100), abi::Status::SUCCESS);
  EXPECT_EQ(Connect(b->hca, eb, kLidA, ea.qpn, 0x000100, 0xFFFF00), abi::Status::SUCCESS);
}

void RcOverSwitches::SetFaultsEverywhere(const LinkFaults& faults) {
  for (uint32_t cable : cables) fabric.SetFaults(cable, -1, faults);
}

void RcOverSwitches::Step() {
  if (fabric.Pump() != 0) return;
  now_ += 1'000'000;
  fabric.AdvanceTo(now_);
  a->hca.Tick(now_);
  b->hca.Tick(now_);
}

RcRunResult RcOverSwitches::RunSends(uint32_t messages, uint32_t window) {
  constexpr uint32_t kSlot = 4096;  // a receive slot per message, reused round robin
  constexpr uint32_t kSlots = 128;
  RcRunResult r;
  uint32_t posted = 0, recvs_posted = 0;
  auto fail = [&](std::string why) {
    if (r.error.empty()) r.error = std::move(why);
  };
  for (uint64_t idle = 0; r.error.empty() &&
                          (r.sends_completed < messages || r.messages_received < messages) &&
                          idle < 100'000;) {
    while (recvs_posted < messages && recvs_posted < r.messages_received + kSlots) {
      abi::RecvWorkRequest recv{};
      recv.wr_id = recvs_posted;
      recv.num_sge = 1;
      recv.sge[0] = {eb.addr((recvs_posted % kSlots) * kSlot), kSlot, eb.key};
      if (b->hca.PostRecv(eb.qpn, recv) != abi::Status::SUCCESS) fail("PostRecv refused");
      ++recvs_posted;
    }
    while (posted < messages && posted < r.sends_completed + window) {
      const uint32_t length = LengthOf(posted);
      const uint64_t at = (posted % kSlots) * kSlot;
      for (uint32_t i = 0; i < length; ++i) ea.buffer[at + i] = PatternByte(posted, i);
      abi::SendWorkRequest send{};
      send.wr_id = posted;
      send.wr_type = abi::WrType::SEND;
      send.num_sge = 1;
      send.sge[0] = {ea.addr(at), length, ea.key};
      if (a->hca.PostSend(ea.qpn, send) != abi::Status::SUCCESS) fail("PostSend refused");
      ++posted;
    }
    const uint32_t before = r.sends_completed + r.messages_received;
    Step();
    abi::WorkCompletion wc[64];
    for (uint32_t n = a->hca.Cq(ea.cq)->Poll(wc), i = 0; i < n; ++i) {
      if (wc[i].status != abi::WcStatus::SUCCESS)
        fail("send " + std::to_string(wc[i].wr_id) + " completed with status " +
             std::to_string(static_cast<int>(wc[i].status)));
      if (wc[i].wr_id != r.sends_completed) fail("sends completed out of order");
      ++r.sends_completed;
    }
    for (uint32_t n = b->hca.Cq(eb.cq)->Poll(wc), i = 0; i < n; ++i) {
      const uint32_t m = r.messages_received;
      if (wc[i].status != abi::WcStatus::SUCCESS) fail("receive failed");
      if (wc[i].wr_id != m) fail("receive " + std::to_string(wc[i].wr_id) + " out of order");
      if (wc[i].length != LengthOf(m)) fail("message " + std::to_string(m) + " has a wrong length");
      const uint64_t at = (m % kSlots) * kSlot;
      for (uint32_t k = 0; k < wc[i].length && k < kSlot; ++k) {
        if (eb.buffer[at + k] != PatternByte(m, k)) {
          fail("message " + std::to_string(m) + " has a wrong byte at " + std::to_string(k));
          break;
        }
      }
      ++r.messages_received;
    }
    idle = r.sends_completed + r.messages_received == before ? idle + 1 : 0;
  }
  if (r.error.empty() && (r.sends_completed < messages || r.messages_received < messages))
    fail("stalled");
  for (uint32_t cable : cables) {
    for (int d = 0; d < 2; ++d) {
      const LinkCounters& c = fabric.counters(cable, d);
      r.lost += c.lost;
      r.carried += c.carried;
      r.duplicated += c.duplicated;
      r.reordered += c.reordered;
    }
  }
  return r;
}

}  // namespace softib::fabric::testing
