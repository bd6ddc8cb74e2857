// rdma_cm IP addressing over the IB CM (IBTA Annex A11, Linux rdma_cm): a connection
// addressed by IP address and port is a REQ to the service ID of its port space and
// destination port, whose private data starts with the CMA header (version 0, IP version,
// the source port, source and destination address; IPv4 in the last 4 bytes of a 16-byte
// field). A listen on an IP port is a listen on that service ID.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>

namespace softib::al::cm {

// rdma_cm port spaces that map onto IB service IDs 0x0000000001PPPPPP | port.
enum class RdmaPortSpace : uint16_t { TCP = 0x0106, UDP = 0x0111, IB = 0x013F };

inline constexpr uint64_t kRdmaIpServiceMask = 0xFFFFFFFFFFFF0000;
inline constexpr std::size_t kCmaHeaderBytes = 36;
inline constexpr uint8_t kCmaVersion = 0;

// The service ID a listen on (port space, port) uses and a REQ to it carries.
uint64_t RdmaIpServiceId(RdmaPortSpace space, uint16_t port);
// The port space and port of an RDMA IP CM service ID; nullopt outside the range.
struct RdmaIpService {
  RdmaPortSpace space{};
  uint16_t port = 0;
};
std::optional<RdmaIpService> ParseRdmaIpServiceId(uint64_t service_id);

// Both ends of an IP-addressed connection. An IPv4 address is the first 4 bytes of
// `address` (network order), the rest zero.
struct IpEndpoint {
  std::array<uint8_t, 16> address{};
  uint16_t port = 0;  // host order
};
struct IpConnection {
  uint8_t ip_version = 4;  // 4 or 6
  IpEndpoint source;
  IpEndpoint destination;
};

// The CMA header for a REQ from `c.source` to `c.destination` (whose port goes into the
// service ID, not the header).
std::array<uint8_t, kCmaHeaderBytes> EncodeCmaHeader(const IpConnection& c);
// A REQ's addresses from its service ID and private data; nullopt when the service ID is
// not an RDMA IP one or the header is short, of another version, of an IP version other
// than 4 and 6, or an IPv4 address has non-zero padding.
std::optional<IpConnection> DecodeCmaHeader(uint64_t service_id,
                                            std::span<const uint8_t> private_data);

}  // namespace softib::al::cm
