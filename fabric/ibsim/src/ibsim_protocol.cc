#include "softib/fabric/ibsim_protocol.h"

#include <cstring>

#include "hca/device/packet.h"

namespace softib::fabric::ibsim {

namespace {

uint32_t LoadHost32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void StoreHost32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
uint32_t LoadBe32(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
void StoreBe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

constexpr uint32_t kQp1QKey = 0x80010000;
constexpr uint8_t kUdSendOnly = 0x64;
constexpr uint16_t kPermissiveLid = 0xFFFF;
constexpr std::size_t kTid = 8;  // MAD header: TransactionID at byte 8

}  // namespace

std::optional<CtlMessage> ParseCtl(std::span<const uint8_t> bytes) {
  if (bytes.size() != kCtlBytes) return std::nullopt;
  CtlMessage m;
  m.magic = LoadHost32(&bytes[0]);
  m.client_id = LoadHost32(&bytes[4]);
  m.type = static_cast<CtlType>(LoadHost32(&bytes[8]));
  m.length = LoadHost32(&bytes[12]);
  std::memcpy(m.data.data(), &bytes[16], m.data.size());
  return m;
}

std::array<uint8_t, kCtlBytes> EncodeCtl(const CtlMessage& m) {
  std::array<uint8_t, kCtlBytes> out{};
  StoreHost32(&out[0], m.magic);
  StoreHost32(&out[4], m.client_id);
  StoreHost32(&out[8], static_cast<uint32_t>(m.type));
  StoreHost32(&out[12], m.length);
  std::memcpy(&out[16], m.data.data(), m.data.size());
  return out;
}

ClientInfo ParseClientInfo(const std::array<uint8_t, 64>& data) {
  ClientInfo info;
  info.id = LoadHost32(&data[0]);
  info.qp = LoadHost32(&data[4]);
  info.issm = LoadHost32(&data[8]);
  const char* name = reinterpret_cast<const char*>(&data[12]);
  info.nodeid.assign(name, strnlen(name, 32));
  return info;
}

void EncodeClientInfo(const ClientInfo& info, std::array<uint8_t, 64>* data) {
  StoreHost32(&(*data)[0], info.id);
  StoreHost32(&(*data)[4], info.qp);
  StoreHost32(&(*data)[8], info.issm);
  std::memset(&(*data)[12], 0, 32);
  std::memcpy(&(*data)[12], info.nodeid.data(), std::min<std::size_t>(info.nodeid.size(), 31));
}

std::optional<Request> ParseRequest(std::span<const uint8_t> bytes) {
  if (bytes.size() != kRequestBytes) return std::nullopt;
  Request r;
  r.dlid = static_cast<uint16_t>(bytes[0] << 8 | bytes[1]);
  r.slid = static_cast<uint16_t>(bytes[4] << 8 | bytes[5]);
  r.dqp = LoadBe32(&bytes[8]);
  r.sqp = LoadBe32(&bytes[12]);
  r.status = LoadBe32(&bytes[16]);
  r.reserved = LoadHost32(&bytes[20]);
  r.length = uint64_t{LoadBe32(&bytes[24])} << 32 | LoadBe32(&bytes[28]);
  std::memcpy(r.mad.data(), &bytes[32], kMadBytes);
  return r;
}

std::array<uint8_t, kRequestBytes> EncodeRequest(const Request& r) {
  std::array<uint8_t, kRequestBytes> out{};
  out[0] = static_cast<uint8_t>(r.dlid >> 8);
  out[1] = static_cast<uint8_t>(r.dlid);
  out[4] = static_cast<uint8_t>(r.slid >> 8);
  out[5] = static_cast<uint8_t>(r.slid);
  StoreBe32(&out[8], r.dqp);
  StoreBe32(&out[12], r.sqp);
  StoreBe32(&out[16], r.status);
  StoreHost32(&out[20], r.reserved);
  StoreBe32(&out[24], static_cast<uint32_t>(r.length >> 32));
  StoreBe32(&out[28], static_cast<uint32_t>(r.length));
  std::memcpy(&out[32], r.mad.data(), kMadBytes);
  return out;
}

std::vector<uint8_t> PacketFromRequest(const Request& r, uint16_t port_lid) {
  if (r.mad[0] != 1 || r.mad[2] > 2 || r.dqp > 1) return {};  // BaseVersion, ClassVersion
  const bool smi = r.dqp == 0;
  const bool directed = r.dlid == kPermissiveLid;
  hca::PacketHeaders hdr;
  hdr.lrh.VL = smi ? 15 : 0;
  hdr.lrh.DLID = r.dlid;
  hdr.lrh.SLID = directed ? kPermissiveLid : (r.slid != 0 ? r.slid : port_lid);
  hdr.bth.OpCode = kUdSendOnly;
  hdr.bth.P_Key = 0xFFFF;
  hdr.bth.DestQP = r.dqp;
  hdr.deth.Q_Key = smi ? 0 : kQp1QKey;
  hdr.deth.SrcQP = r.sqp & 0xFFFFFF;
  return hca::BuildPacket(hdr, r.mad);
}

std::optional<Request> RequestFromPacket(std::span<const uint8_t> packet) {
  hca::ParsedPacket parsed;
  if (hca::ParsePacket(packet, &parsed) != hca::DropReason::kNone) return std::nullopt;
  const hca::PacketHeaders& h = parsed.hdr;
  if (h.bth.OpCode != kUdSendOnly || h.bth.DestQP > 1 || parsed.payload.size() != kMadBytes)
    return std::nullopt;
  Request r;
  r.dlid = h.lrh.DLID;
  r.slid = h.lrh.SLID;
  r.dqp = h.bth.DestQP;
  r.sqp = h.deth.SrcQP;
  r.length = kMadBytes;
  std::memcpy(r.mad.data(), parsed.payload.data(), kMadBytes);
  return r;
}

uint64_t Tid(const Request& r) {
  uint64_t tid = 0;
  for (int i = 0; i < 8; ++i) tid = tid << 8 | r.mad[kTid + i];
  return tid;
}

void SetTidClient(Request* r, uint32_t client) {
  r->mad[kTid] = static_cast<uint8_t>(client >> 8);
  r->mad[kTid + 1] = static_cast<uint8_t>(client);
}

}  // namespace softib::fabric::ibsim
