// Helpers for MAD service tests: an alias QP, a pool and a service per CA port 1, MAD
// building, and waiting for MAD events (bounded: a lost event fails, never hangs).
#pragma once

#include <chrono>
#include <thread>

#include "kernel_client.h"

namespace softib::testing {

// Where the data of a vendor-class MAD with RMPP starts: common header 24 + RMPP 12 + OUI 4.
inline constexpr uint32_t kVendorRmppHeader = 40;

struct MadEnd {
  uint64_t ca = 0, pd = 0, cq = 0, qp = 0, pool = 0, svc = 0;
  uint16_t lid = 0;
};

struct MadEvent {
  abi::GetMadEventOut out{};
  std::vector<uint8_t> mad;
};

inline abi::MadSvcParams SvcParams(uint8_t mgmt_class, std::initializer_list<uint8_t> methods,
                                   abi::MadSvcType type = abi::MadSvcType::DEFAULT) {
  abi::MadSvcParams p{};
  p.svc_type = type;
  p.mgmt_class = mgmt_class;
  p.mgmt_version = 1;
  p.support_unsolicited = methods.size() != 0 ? 1 : 0;
  for (uint8_t m : methods) p.method_mask[m / 8] |= static_cast<uint8_t>(1u << (m % 8));
  return p;
}

// Alias QP of port 1 of `guid`, a pool and (when params given) a service.
inline void OpenMadEnd(Client& client, uint64_t guid, uint16_t lid, abi::QpType alias,
                       MadEnd* end) {
  end->lid = lid;
  abi::OpenCaOut ca{};
  ASSERT_EQ(client.OpenCa({{client.al_handle()}, htobe64(guid), 0}, &ca), Status::SUCCESS);
  end->ca = ca.ca.value;
  abi::AllocPdOut pd{};
  ASSERT_EQ(client.AllocPd({{end->ca}, abi::PdType::ALIAS, 0, 0}, &pd), Status::SUCCESS);
  end->pd = pd.pd.value;
  abi::CreateCqOut cq{};
  ASSERT_EQ(client.CreateCq({{end->ca}, 16, 0, 0}, &cq), Status::SUCCESS);
  end->cq = cq.cq.value;
  abi::QueryCaOut query{};
  std::vector<abi::PortAttributes> ports;
  ASSERT_EQ(client.QueryCa(end->ca, &query, &ports), Status::SUCCESS);
  abi::GetSpecialQpIn in{};
  in.pd.value = end->pd;
  in.send_cq.value = end->cq;
  in.recv_cq.value = end->cq;
  in.port_guid = ports[0].port_guid;
  in.params.qp_type = alias;
  in.params.caps = {16, 16, 1, 1, 0, 0};
  abi::GetSpecialQpOut qp{};
  ASSERT_EQ(kernel::IbGetSpecialQp(client.al(), in, qp), Status::SUCCESS);
  end->qp = qp.qp.value;
  abi::CreateMadPoolOut pool{};
  ASSERT_EQ(kernel::IbCreateMadPool(client.al(), {{client.al_handle()}, 4, 0, 4, 0}, pool),
            Status::SUCCESS);
  end->pool = pool.pool.value;
}

inline Status RegSvc(Client& client, MadEnd* end, const abi::MadSvcParams& params,
                     uint64_t* svc = nullptr) {
  abi::RegMadSvcOut out{};
  const Status s = kernel::IbRegMadSvc(client.al(), {{end->qp}, {end->pool}, params}, out);
  if (s == Status::SUCCESS) (svc != nullptr ? *svc : end->svc) = out.svc.value;
  return s;
}

// A 256-byte MAD: base version 1, the class, version 1, method, TID, attribute.
inline std::vector<uint8_t> MakeMad(uint8_t mgmt_class, uint8_t method, uint64_t tid,
                                    uint16_t attribute, uint8_t fill = 0) {
  std::vector<uint8_t> m(256, fill);
  m[0] = 1;
  m[1] = mgmt_class;
  m[2] = 1;
  m[3] = method;
  m[4] = m[5] = m[6] = m[7] = 0;
  for (int i = 0; i < 8; ++i) m[8 + i] = static_cast<uint8_t>(tid >> (56 - 8 * i));
  m[16] = static_cast<uint8_t>(attribute >> 8);
  m[17] = static_cast<uint8_t>(attribute);
  m[18] = m[19] = 0;
  return m;
}

inline uint64_t TidOf(const std::vector<uint8_t>& m) {
  uint64_t tid = 0;
  for (int i = 0; i < 8; ++i) tid = tid << 8 | m[8 + i];
  return tid;
}

inline abi::SendMadIn SendTo(uint64_t svc, uint16_t lid, uint32_t length, uint32_t timeout_ms,
                             uint32_t retries, bool response, uint64_t context) {
  abi::SendMadIn in{};
  in.svc.value = svc;
  in.params.context = context;
  in.params.remote_qpn = 1;
  in.params.remote_qkey = htobe32(0x80010000);
  in.params.timeout_ms = timeout_ms;
  in.params.retry_count = retries;
  in.params.remote_lid = lid;
  in.params.response_expected = response ? 1 : 0;
  in.mad_length = length;
  return in;
}

inline Status SendMadTo(Client& client, const abi::SendMadIn& in, const std::vector<uint8_t>& mad,
                        uint64_t* send_id) {
  abi::SendMadOut out{};
  const Status s = kernel::IbSendMad(client.al(), in, mad, out);
  if (send_id != nullptr) *send_id = out.send_id;
  return s;
}

// The next event of `svc`, polling the direct call (which answers CANCELED while nothing is
// queued) for up to 10 s.
inline bool NextMadEvent(Client& client, uint64_t svc, MadEvent* event, uint32_t capacity = 256) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    event->mad.assign(capacity, 0);
    const Status s = kernel::IbGetMadEvent(client.al(), {{svc}}, event->out, event->mad);
    if (s == Status::SUCCESS) {
      event->mad.resize(event->out.mad_length);
      return true;
    }
    if (s != Status::CANCELED) {
      ADD_FAILURE() << "GetMadEvent: " << static_cast<int>(s);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

}  // namespace softib::testing
