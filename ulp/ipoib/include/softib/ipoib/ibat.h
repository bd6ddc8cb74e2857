// IBAT, the IB address translation that the IPoIB driver offers (WinOFED's core/ibat): which
// local port an IP address is on, and how to reach a remote IP address over InfiniBand —
// its GID, the partition and a path record — for WinVerbs, SDP, rdma_cm and uDAPL. Kernel
// clients call these functions; user processes send the IOCTLs of idl/ibat.idl to the
// node's IBAT device, whose handlers call them. CONTRACT written by the lead; the driver
// (ulp/ipoib/driver/src/ibat*.cc) implements it and may add to it.
//
// Where the answers come from: the driver knows each interface's own addresses
// (SetAddresses) and learns remote IP → hardware address from the ARP and neighbour
// discovery packets it translates in either direction. A remote address nobody has talked
// to yet is asked for on the link by the driver itself (an IPoIB ARP request or an ICMPv6
// neighbour solicitation from the interface's own address) and the caller is told PENDING,
// as IbatResolve in WinOFED answers E_PENDING: it asks again. The path record comes from
// the SA (PathRecord, SGID = the interface's port GID, DGID = the neighbour's GID, the
// interface's P_Key) and is kept with the neighbour until the port or the SM changes.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "softib/ipoib/ipoib.h"

namespace softib::ipoib {

// An address of one of the driver's interfaces, and where it is.
struct IbatLocalAddress {
  IpAddr ip;
  uint64_t ca_guid = 0;    // host order
  uint64_t port_guid = 0;  // host order
  uint8_t port = 0;        // the interface's active port
  uint16_t pkey = 0;       // full-membership bit set
  Gid gid{};               // the port's GID (network order)
};

// Every address of every interface whose port GUID is `port_guid` (host order; 0: of every
// interface), in the order the interfaces were created and the host assigned the
// addresses. IRQL <= DISPATCH.
std::vector<IbatLocalAddress> IbatGetIpList(Driver* driver, uint64_t port_guid = 0);

// The interface holding `local` (an address the host assigned): SUCCESS with its entry, or
// NOT_FOUND. IRQL <= DISPATCH.
kernel::Status IbatIpToPort(Driver* driver, const IpAddr& local, IbatLocalAddress* out);

// How to reach a remote IP address.
struct IbatPath {
  Gid sgid{};  // the local port's GID
  Gid dgid{};  // the remote port's GID
  uint16_t pkey = 0;
  uint32_t remote_qpn = 0;  // the remote interface's UD QPN (its hardware address)
  Mac remote_mac{};         // the MAC the host's Ethernet face sees for the remote
  // The SA's PathRecord (IBA 15.2.5.16), 64 bytes as on the wire.
  std::array<uint8_t, 64> path_record{};
};

// Resolves `remote` through the interface holding `local` (an address the host assigned;
// unspecified — all zero — means any interface whose subnet or link the remote shares; the
// first interface with a carrier when none says so). Statuses:
//   SUCCESS           `out` is filled.
//   PENDING           resolution is under way (an ARP/ND request or a path query went
//                     out); ask again. Repeated calls while pending send nothing new.
//   NOT_FOUND         no interface holds `local`, or none has a carrier.
//   TIMEOUT           nobody answered the ARP/ND requests (3 tries, 1 s apart: the
//                     interface's InterfaceConfig::ibat_retry_interval), or the
//                     SA gave no path; the next call starts over.
//   INVALID_PARAMETER `remote` is unspecified, multicast or broadcast.
// A `remote` that is an address of one of the driver's interfaces resolves at once to that
// interface (loopback: DGID = its GID, its own QPN), as a connection to oneself needs.
// IRQL <= DISPATCH; never blocks.
kernel::Status IbatResolve(Driver* driver, const IpAddr& local, const IpAddr& remote,
                           IbatPath* out);

}  // namespace softib::ipoib
