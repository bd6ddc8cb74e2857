// The CMA header codec (the field layout is mad_cm.idl's CmaIpPrivateData).
#include "runtime/al/src/cm/cm_ip.h"

#include <algorithm>

#include "softib/mad/mad_cm.h"

namespace softib::al::cm {

namespace {

constexpr std::size_t kIpv4Padding = 12;  // an IPv4 address ends its 16-byte field

bool KnownSpace(uint16_t space) {
  return space == static_cast<uint16_t>(RdmaPortSpace::TCP) ||
         space == static_cast<uint16_t>(RdmaPortSpace::UDP) ||
         space == static_cast<uint16_t>(RdmaPortSpace::IB);
}

std::array<uint8_t, 16> ToField(const std::array<uint8_t, 16>& address, uint8_t ip_version) {
  if (ip_version == 6) return address;
  std::array<uint8_t, 16> field{};
  std::copy_n(address.begin(), 4, field.begin() + kIpv4Padding);
  return field;
}

std::optional<std::array<uint8_t, 16>> FromField(const std::array<uint8_t, 16>& field,
                                                 uint8_t ip_version) {
  if (ip_version == 6) return field;
  if (!std::all_of(field.begin(), field.begin() + kIpv4Padding, [](uint8_t b) { return b == 0; }))
    return std::nullopt;
  std::array<uint8_t, 16> address{};
  std::copy_n(field.begin() + kIpv4Padding, 4, address.begin());
  return address;
}

}  // namespace

uint64_t RdmaIpServiceId(RdmaPortSpace space, uint16_t port) {
  return uint64_t{static_cast<uint16_t>(space)} << 16 | port;
}

std::optional<RdmaIpService> ParseRdmaIpServiceId(uint64_t service_id) {
  const uint64_t prefix = (service_id & kRdmaIpServiceMask) >> 16;
  if (prefix > 0xFFFF || !KnownSpace(static_cast<uint16_t>(prefix))) return std::nullopt;
  return RdmaIpService{static_cast<RdmaPortSpace>(prefix),
                       static_cast<uint16_t>(service_id & 0xFFFF)};
}

std::array<uint8_t, kCmaHeaderBytes> EncodeCmaHeader(const IpConnection& c) {
  softib::mad::CmaIpPrivateData h;
  h.CmaVersion = kCmaVersion;
  h.IPVersion = c.ip_version;
  h.Port = c.source.port;
  h.SrcAddress = ToField(c.source.address, c.ip_version);
  h.DstAddress = ToField(c.destination.address, c.ip_version);
  return h.Pack();
}

std::optional<IpConnection> DecodeCmaHeader(uint64_t service_id,
                                            std::span<const uint8_t> private_data) {
  const auto service = ParseRdmaIpServiceId(service_id);
  softib::mad::CmaIpPrivateData h;
  if (!service || private_data.size() < kCmaHeaderBytes ||
      !h.Unpack(private_data.first(kCmaHeaderBytes)) || h.CmaVersion != kCmaVersion ||
      (h.IPVersion != 4 && h.IPVersion != 6)) {
    return std::nullopt;
  }
  const auto source = FromField(h.SrcAddress, h.IPVersion);
  const auto destination = FromField(h.DstAddress, h.IPVersion);
  if (!source || !destination) return std::nullopt;
  IpConnection c;
  c.ip_version = h.IPVersion;
  c.source = {*source, h.Port};
  c.destination = {*destination, service->port};
  return c;
}

}  // namespace softib::al::cm
