// The ibsim client protocol (linux-rdma/ibsim include/ibsim.h, as Debian's libumad2sim.so
// from ibsim-utils 0.10 speaks it; docs/notes/ibsim-and-sm-facts.md §1), from the server's
// side: the 80-byte control messages and the 288-byte MAD records, and the conversion of a
// record to and from an InfiniBand packet on the client's port.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace softib::fabric::ibsim {

inline constexpr uint32_t kCtlMagic = 0xDEADBEEF;
inline constexpr std::size_t kCtlBytes = 80;       // struct sim_ctl
inline constexpr std::size_t kRequestBytes = 288;  // struct sim_request (x86-64)
inline constexpr std::size_t kMadBytes = 256;
inline constexpr uint32_t kMaxClients = 10;      // IBSIM_MAX_CLIENTS: sockets out0..out9
inline constexpr uint32_t kStatusDropped = 110;  // ETIMEDOUT: undeliverable

enum class CtlType : uint32_t {
  kError = 0,
  kConnect = 1,
  kDisconnect = 2,
  kGetPort = 3,
  kGetVendor = 4,
  kGetGid = 5,
  kGetGuid = 6,
  kGetNodeInfo = 7,
  kGetPortInfo = 8,
  kSetIssm = 9,
  kGetPkeys = 10,
};

// struct sim_ctl: host byte order, data[64].
struct CtlMessage {
  uint32_t magic = kCtlMagic;
  uint32_t client_id = 0;
  CtlType type = CtlType::kError;
  uint32_t length = 0;
  std::array<uint8_t, 64> data{};
};
std::optional<CtlMessage> ParseCtl(std::span<const uint8_t> bytes);  // nullopt: not 80 bytes
std::array<uint8_t, kCtlBytes> EncodeCtl(const CtlMessage& message);

// struct sim_client_info inside CONNECT's data: id (pid), qp, issm, nodeid[32].
struct ClientInfo {
  uint32_t id = 0;
  uint32_t qp = 0;
  uint32_t issm = 0;
  std::string nodeid;  // "" = the default node
};
ClientInfo ParseClientInfo(const std::array<uint8_t, 64>& data);
void EncodeClientInfo(const ClientInfo& info, std::array<uint8_t, 64>* data);

// struct sim_request: dlid/slid as network-order u16 in a u32, dqp/sqp/status big-endian
// u32, length a big-endian u64, then the MAD.
struct Request {
  uint16_t dlid = 0;  // 0xFFFF: directed route
  uint16_t slid = 0;  // 0: the client port's LID (the server fills it in)
  uint32_t dqp = 0;
  uint32_t sqp = 0;
  uint32_t status = 0;
  uint32_t reserved = 0;  // padding, echoed
  uint64_t length = 0;
  std::array<uint8_t, kMadBytes> mad{};
};
std::optional<Request> ParseRequest(std::span<const uint8_t> bytes);  // nullopt: not 288 bytes
std::array<uint8_t, kRequestBytes> EncodeRequest(const Request& request);

// The packet the client's port transmits for `request` (UD SEND Only on QP0/QP1 with its
// DETH, VL15 for QP0, permissive SLID for a directed-route SMP, ICRC/VCRC); empty when the
// record cannot be a MAD packet (BaseVersion != 1, ClassVersion > 2, QP not 0/1).
std::vector<uint8_t> PacketFromRequest(const Request& request, uint16_t port_lid);
// The record a packet that arrived at the client's port becomes; nullopt when it is not a
// well-formed MAD packet for QP0/QP1.
std::optional<Request> RequestFromPacket(std::span<const uint8_t> packet);

// TID bits 63..48 carry the client index (ibsim's update_trid / client_by_trid).
uint64_t Tid(const Request& r);
void SetTidClient(Request* r, uint32_t client);

}  // namespace softib::fabric::ibsim
