// Helpers for CM tests: kernel clients on the two CAs of one node (LIDs 1 and 2), CEPs,
// PathRecords, events, and the QP transitions a consumer makes from the CEP's attributes.
#pragma once

#include <cstring>
#include <string>
#include <thread>

#include "kernel/verbs_cm_direct.h"
#include "kernel_client.h"
#include "softib/mad/mad_sa.h"

namespace softib::testing {

// An SA PathRecord (wire format) from LID `slid` to `dlid`, subnet-local, P_Key 0xFFFF,
// MTU 1024, packet lifetime `plt`.
inline std::array<uint8_t, 64> PathRecordBytes(uint16_t slid, uint16_t dlid, uint8_t plt = 0) {
  mad::PathRecord path;
  path.SLID = slid;
  path.DLID = dlid;
  path.P_Key = 0xFFFF;
  path.MTU = static_cast<uint8_t>(abi::PathMtu::MTU_1024);
  path.Rate = 3;  // 2.5 Gb/s
  path.PacketLifeTime = plt;
  path.SL = 0;
  path.HopLimit = 0;
  path.Reversible = 1;
  return path.Pack();
}

inline abi::CmReqParams ReqParams(uint64_t service_id, uint16_t slid, uint16_t dlid,
                                  uint8_t response_timeout = 16, uint8_t max_retries = 3) {
  abi::CmReqParams p{};
  p.service_id = htobe64(service_id);
  const auto path = PathRecordBytes(slid, dlid);
  std::memcpy(p.primary_path, path.data(), path.size());
  p.starting_psn = 0x111111;
  p.responder_resources = 4;
  p.initiator_depth = 2;
  p.remote_cm_response_timeout = response_timeout;
  p.local_cm_response_timeout = response_timeout;
  p.retry_count = 6;
  p.rnr_retry_count = 5;
  p.max_cm_retries = max_retries;
  return p;
}

inline abi::CmRepParams RepParams() {
  abi::CmRepParams p{};
  p.starting_psn = 0x222222;
  p.responder_resources = 2;
  p.initiator_depth = 3;
  p.target_ack_delay = 9;
  p.rnr_retry_count = 4;
  return p;
}

inline std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

inline uint64_t CreateCep(Client& client, uint64_t context) {
  abi::CreateCepOut out{};
  EXPECT_EQ(kernel::IbCreateCep(client.al(), {{client.al_handle()}, context}, out),
            Status::SUCCESS);
  return out.cep.value;
}

inline Status Listen(Client& client, uint64_t cep, uint64_t service_id,
                     std::string_view compare = {}, uint8_t offset = 0) {
  abi::CepListenIn in{};
  in.cep.value = cep;
  in.service_id = htobe64(service_id);
  in.compare_offset = offset;
  in.compare_length = static_cast<uint8_t>(compare.size());
  if (!compare.empty()) std::memcpy(in.compare_data, compare.data(), compare.size());
  return kernel::IbCepListen(client.al(), in);
}

inline Status SendReq(Client& client, uint64_t cep, uint64_t qp, const abi::CmReqParams& p,
                      std::string_view private_data = {}) {
  abi::CepSendReqIn in{};
  in.cep.value = cep;
  in.qp.value = qp;
  in.params = p;
  in.private_data_length = static_cast<uint32_t>(private_data.size());
  return kernel::IbCepSendReq(client.al(), in, Bytes(private_data));
}

inline Status SendRep(Client& client, uint64_t cep, uint64_t qp, const abi::CmRepParams& p,
                      std::string_view private_data = {}) {
  abi::CepSendRepIn in{};
  in.cep.value = cep;
  in.qp.value = qp;
  in.params = p;
  in.private_data_length = static_cast<uint32_t>(private_data.size());
  return kernel::IbCepSendRep(client.al(), in, Bytes(private_data));
}

// The next event of `cep`, polling the direct call (CANCELED while none is queued) for up
// to 10 s.
inline bool NextCepEvent(Client& client, uint64_t cep, abi::CepGetEventOut* out) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    const Status s = kernel::IbCepGetEvent(client.al(), {{cep}}, *out);
    if (s == Status::SUCCESS) return true;
    if (s != Status::CANCELED) {
      ADD_FAILURE() << "CepGetEvent: " << static_cast<int>(s);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ADD_FAILURE() << "no CEP event";
  return false;
}

inline abi::CepEventType NextEventType(Client& client, uint64_t cep) {
  abi::CepGetEventOut out{};
  return NextCepEvent(client, cep, &out) ? out.event : abi::CepEventType{};
}

// RESET -> INIT on port 1 (P_Key index 0), remote read/write allowed.
inline void InitQp(Client& client, const Side& side) {
  using M = abi::QpAttrMask;
  abi::ModifyQpIn in{};
  in.qp.value = side.qp;
  in.attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::ACCESS_FLAGS;
  in.attributes.state = abi::QpState::INIT;
  in.attributes.port_num = 1;
  in.attributes.access_flags = abi::AccessFlags::REMOTE_WRITE | abi::AccessFlags::REMOTE_READ;
  ASSERT_EQ(client.ModifyQp(in), Status::SUCCESS);
}

// RTR then RTS from the CEP's attributes; returns them for checks.
inline void ApplyCepAttributes(Client& client, uint64_t cep, const Side& side,
                               abi::QpModifyAttributes* rtr, abi::QpModifyAttributes* rts) {
  abi::CepGetRtrAttributesOut r{};
  ASSERT_EQ(kernel::IbCepGetRtrAttributes(client.al(), {{cep}}, r), Status::SUCCESS);
  ASSERT_EQ(client.ModifyQp({{side.qp}, r.attributes}), Status::SUCCESS);
  abi::CepGetRtsAttributesOut s{};
  ASSERT_EQ(kernel::IbCepGetRtsAttributes(client.al(), {{cep}}, s), Status::SUCCESS);
  ASSERT_EQ(client.ModifyQp({{side.qp}, s.attributes}), Status::SUCCESS);
  if (rtr != nullptr) *rtr = r.attributes;
  if (rts != nullptr) *rts = s.attributes;
}

// Big-endian reads from a received MAD (the CM message starts at byte 24).
inline uint32_t Be(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | p[i];
  return v;
}
inline uint64_t Be64(const uint8_t* p) { return uint64_t{Be(p, 4)} << 32 | Be(p + 4, 4); }

// CEPs still counted once every handle is destroyed, after a bounded wait: whoever posted
// the last event holds its reference until its post returns, which can be after the waiter
// woke, and a destroy in time-wait lets go when the timer does.
inline uint32_t CepsLeft(al::AccessLayer* al) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (al::QueryNodeObjectCounts(al).cep != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return al::QueryNodeObjectCounts(al).cep;
}

}  // namespace softib::testing
