// softib_mcast_client: UD multicast between user processes on a softibd fabric.
//
//   softib_mcast_client <run dir> recv <MGID hex32> <MLID> <seconds> [pkey index] [stop]
//     A UD QP attached to the group: prints "ready", then prints each payload ("mcast <n>")
//     that arrives within <seconds> (or until <stop> arrived) and "received N".
//   softib_mcast_client <run dir> send <MGID hex32> <MLID> <count> [pkey index]
//     Sends <count> UD SENDs to the group (DLID = MLID, GRH DGID = MGID, DestQP 0xFFFFFF)
//     with the P_Key at [pkey index] of port 1; prints "sent N".
//   join-recv / sendonly-recv / join-send instead of recv / send: the QP joins the group
//     through the SA first (JoinMcast: a full member, which the AL attaches, or a send-only
//     member, which it does not), creating it when it is new (Q_Key 0x11111111, P_Key
//     0xFFFF), and uses the MLID the SA answered (the MLID argument is ignored); prints
//     "joined mlid=0x...". A receiver then leaves (LeaveMcast) before it exits.
// Exit 0 when the verbs worked (the counts are the caller's to judge).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "rc_endpoint.h"
#include "user/runtime_ioctls_proxy.h"
#include "user/verbs_al_proxy.h"
#include "user/verbs_ca_proxy.h"
#include "user/verbs_cq_proxy.h"
#include "user/verbs_mcast_proxy.h"
#include "user/verbs_pd_av_proxy.h"
#include "user/verbs_qp_proxy.h"

namespace softib::integration {
namespace {

using abi::QpAttrMask;
constexpr uint32_t kQkey = 0x11111111;  // the same in either byte order
constexpr uint32_t kSlot = 256;         // 40 bytes of GRH, then the payload
constexpr uint32_t kSlots = 16;

int Fail(const char* what, Status status) {
  std::fprintf(stderr, "softib_mcast_client: %s: %s\n", what, abi::ToString(status));
  return 1;
}

bool ParseGid(const char* hex, abi::Gid* gid) {
  if (std::strlen(hex) != 32) return false;
  for (int i = 0; i < 16; ++i) {
    char byte[3] = {hex[2 * i], hex[2 * i + 1], 0};
    char* end = nullptr;
    gid->raw[i] = static_cast<uint8_t>(std::strtoul(byte, &end, 16));
    if (*end) return false;
  }
  return true;
}

int Run(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: softib_mcast_client RUN_DIR recv|send MGID MLID N [PKEY_INDEX]\n");
    return 2;
  }
  const std::string mode = argv[2];
  const bool send = mode == "send" || mode == "join-send";
  const bool join = mode.starts_with("join-") || mode == "sendonly-recv";
  const bool full_member = mode == "join-recv";
  abi::Gid mgid{};
  if (!ParseGid(argv[3], &mgid)) return std::fprintf(stderr, "bad MGID\n"), 2;
  auto mlid = static_cast<uint16_t>(std::strtoul(argv[4], nullptr, 0));
  const double n = std::strtod(argv[5], nullptr);
  const auto pkey_index = static_cast<uint16_t>(argc > 6 ? std::atoi(argv[6]) : 0);
  const long stop = argc > 7 ? std::atol(argv[7]) : -1;

  user::AlFile al;
  Status s = user::OpenAl(argv[1], &al);
  if (s != Status::SUCCESS) return Fail("OpenAl", s);
  abi::GetCaGuidsIn guids_in{};
  guids_in.al = al.al;
  abi::GetCaGuidsOut guids_out{};
  uint64_t guids[64] = {};
  s = user::proxy::GetCaGuids(al.device, guids_in, guids_out, guids);
  if (s != Status::SUCCESS || guids_out.num_cas < 1) return Fail("GetCaGuids", s);
  user::CaFile ca;
  if ((s = user::OpenCaByGuid(al, guids[0], 1, &ca)) != Status::SUCCESS) return Fail("OpenCa", s);
  abi::Handle<abi::ObjectType::Pd> pd;
  if ((s = AllocPd(ca, &pd)) != Status::SUCCESS) return Fail("AllocPd", s);
  std::vector<uint8_t> buffer(kSlot * kSlots);
  abi::Handle<abi::ObjectType::Mr> mr;
  uint32_t lkey = 0, rkey = 0;
  s = RegisterBuffer(ca, pd, buffer.data(), buffer.size(), abi::AccessFlags::LOCAL_WRITE, &mr,
                     &lkey, &rkey);
  if (s != Status::SUCCESS) return Fail("RegMem", s);

  abi::Handle<abi::ObjectType::Cq> cq;
  abi::Handle<abi::ObjectType::Qp> qp;
  uint32_t qpn = 0;
  if ((s = CreateCqAndQp(ca, pd, abi::QpType::UD, kSlots, &cq, &qp, &qpn)) != Status::SUCCESS)
    return Fail("CreateCq + CreateQp UD", s);
  abi::ModifyQpIn m{};
  m.qp = qp;
  m.attributes.mask =
      QpAttrMask::STATE | QpAttrMask::PKEY_INDEX | QpAttrMask::PORT | QpAttrMask::QKEY;
  m.attributes.state = abi::QpState::INIT;
  m.attributes.port_num = 1;
  m.attributes.pkey_index = pkey_index;
  m.attributes.qkey = kQkey;
  if ((s = user::proxy::ModifyQp(ca.device, m)) != Status::SUCCESS) return Fail("INIT", s);
  m.attributes = {};
  m.attributes.mask = QpAttrMask::STATE;
  m.attributes.state = abi::QpState::RTR;
  if ((s = user::proxy::ModifyQp(ca.device, m)) != Status::SUCCESS) return Fail("RTR", s);
  m.attributes.mask = QpAttrMask::STATE | QpAttrMask::SQ_PSN;
  m.attributes.state = abi::QpState::RTS;
  m.attributes.sq_psn = 1;
  if ((s = user::proxy::ModifyQp(ca.device, m)) != Status::SUCCESS) return Fail("RTS", s);
  user::MappedCq cq_ring;
  user::MappedQp qp_rings;
  if ((s = cq_ring.Map(ca.device, cq)) != Status::SUCCESS ||
      (s = qp_rings.Map(ca.device, qp)) != Status::SUCCESS)
    return Fail("MapRings", s);
  auto poll = [&](abi::WorkCompletion* wc, std::chrono::steady_clock::time_point deadline) {
    return PollCqOne(cq_ring, wc, deadline);
  };

  abi::JoinMcastOut joined{};
  if (join) {
    std::vector<abi::PortAttributes> ports(2);
    abi::QueryCaOut query{};
    if ((s = user::proxy::QueryCa(ca.device, {ca.ca}, query, ports)) != Status::SUCCESS)
      return Fail("QueryCa", s);
    abi::JoinMcastIn in{};
    in.qp = qp;
    in.port_guid = ports[0].port_guid;
    in.timeout_ms = 2000;
    in.retry_count = 3;
    // MGID, PortGID, Q_Key, TClass, P_Key, SL, FlowLabel, JoinState (creation's components).
    in.component_mask = 1 | 2 | 4 | (1 << 6) | (1 << 7) | (1 << 12) | (1 << 13) | (1 << 16);
    std::memcpy(in.member_record, mgid.raw, 16);
    std::memcpy(in.member_record + 16, &ports[0].subnet_prefix, 8);
    std::memcpy(in.member_record + 24, &ports[0].port_guid, 8);
    std::memcpy(in.member_record + 32, &kQkey, 4);
    in.member_record[40] = in.member_record[41] = 0xFF;
    in.member_record[48] = full_member ? 0x1 : 0x8;  // FullMember / SendOnlyFullMember
    if ((s = user::proxy::JoinMcast(ca.device, in, joined)) != Status::SUCCESS)
      return Fail("JoinMcast", s);
    mlid = static_cast<uint16_t>(joined.joined_record[36] << 8 | joined.joined_record[37]);
    std::printf("joined mlid=0x%04x\n", mlid);
    std::fflush(stdout);
  }

  if (!send) {
    abi::AttachMcastIn at{};
    at.qp = qp;
    at.mgid = mgid;
    at.mlid = mlid;
    abi::AttachMcastOut at_out{};
    if (!join && (s = user::proxy::AttachMcast(ca.device, at, at_out)) != Status::SUCCESS)
      return Fail("AttachMcast", s);
    for (uint32_t i = 0; i < kSlots; ++i) {
      const abi::RecvWorkRequest wr = RecvWr(i, &buffer[i * kSlot], kSlot, lkey);
      uint32_t posted = 0;
      if ((s = qp_rings.queue().PostRecv(std::span(&wr, 1), &posted)) != Status::SUCCESS)
        return Fail("PostRecv", s);
    }
    std::printf("ready\n");
    std::fflush(stdout);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(n * 1000));
    long received = 0;
    abi::WorkCompletion wc{};
    while (received != stop && poll(&wc, deadline) == Status::SUCCESS) {
      if (wc.status != abi::WcStatus::SUCCESS) {
        std::fprintf(stderr, "softib_mcast_client: receive: %s\n", abi::ToString(wc.status));
        return 1;
      }
      const char* payload = reinterpret_cast<const char*>(&buffer[wc.wr_id * kSlot + 40]);
      std::printf("%.*s\n", static_cast<int>(wc.length - 40), payload);
      ++received;
      const abi::RecvWorkRequest wr = RecvWr(wc.wr_id, &buffer[wc.wr_id * kSlot], kSlot, lkey);
      uint32_t posted = 0;
      qp_rings.queue().PostRecv(std::span(&wr, 1), &posted);
    }
    std::printf("received %ld\n", received);
    if (join && (s = user::proxy::LeaveMcast(ca.device, {joined.join})) != Status::SUCCESS)
      return Fail("LeaveMcast", s);
    return 0;
  }

  abi::CreateAvIn av_in{};
  av_in.pd = pd;
  av_in.attributes.port_num = 1;
  av_in.attributes.dlid = mlid;
  av_in.attributes.grh_present = 1;
  av_in.attributes.grh.dgid = mgid;
  av_in.attributes.grh.hop_limit = 1;
  abi::CreateAvOut av_out{};
  if ((s = user::proxy::CreateAv(ca.device, av_in, av_out)) != Status::SUCCESS)
    return Fail("CreateAv", s);
  long sent = 0;
  for (long i = 0; i < static_cast<long>(n); ++i) {
    char* text = reinterpret_cast<char*>(&buffer[0]);
    const int len = std::snprintf(text, kSlot, "mcast %ld", i);
    abi::SendWorkRequest wr = SendWr(i, abi::WrType::SEND, text, static_cast<uint32_t>(len), lkey);
    wr.av = av_out.av;
    wr.remote_qpn = 0xFFFFFF;
    wr.remote_qkey = kQkey;
    uint32_t posted = 0;
    if ((s = qp_rings.queue().PostSend(std::span(&wr, 1), &posted)) != Status::SUCCESS)
      return Fail("PostSend", s);
    abi::WorkCompletion wc{};
    s = poll(&wc, std::chrono::steady_clock::now() + std::chrono::seconds(10));
    if (s != Status::SUCCESS || wc.status != abi::WcStatus::SUCCESS)
      return Fail("send completion", s);
    ++sent;
  }
  std::printf("sent %ld\n", sent);
  return 0;
}

}  // namespace
}  // namespace softib::integration

int main(int argc, char** argv) { return softib::integration::Run(argc, argv); }
