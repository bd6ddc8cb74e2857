// The IPoIB driver (RFC 4391/4755): a kernel ULP of a node that attaches to the bus
// driver's IPoIB PDO of each port and, per interface, speaks IPoIB on the fabric through
// the AL (verbs sent to its PDO) while presenting an Ethernet face to the host. CONTRACT
// written by the lead; ulp/ipoib/driver implements it and may add to it.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "softib/ipoib/ethernet_face.h"
#include "softib/ipoib/translate.h"
#include "softib/kernel/node.h"
#include "softib/kernel/status.h"

namespace softib::ipoib {

enum class Mode : uint8_t { kDatagram, kConnected };
// (Added by the LBFO work.) How an interface over two ports uses them: active/standby (every
// frame on the active port, the other takes over when its link goes), or balance (unicast IP
// spread across the ports by flow hash, as bonding's balance-tlb; ARP, ND and multicast, and
// every receive, on the advertised = active port).
enum class LbfoMode : uint8_t { kActiveStandby, kBalance };

struct InterfaceConfig {
  std::string name;                  // shown by Query (the TAP's name)
  uint64_t ca_guid = 0;              // host order; 0: the node's first CA
  std::vector<uint8_t> ports = {1};  // two ports: one interface over both (LBFO)
  uint16_t pkey = 0xFFFF;            // the partition (full-membership bit set)
  Mode mode = Mode::kDatagram;
  // (Added by the LBFO work.) With two ports: the teaming mode, and whether the interface
  // moves back to ports[0] (the primary) when its link returns (default: yes).
  LbfoMode lbfo = LbfoMode::kActiveStandby;
  bool failback = true;
  // (Added by IBAT, ibat.h.) How long IbatResolve's ARP/ND requests wait for an answer
  // before the next try (3 tries, then TIMEOUT). Tests shorten it.
  std::chrono::milliseconds ibat_retry_interval{1000};
  // (Added by connected mode's idle teardown.) An RC connection with no traffic either way
  // for this long is torn down (DREQ; its QP freed); the next frame connects again. 60 s, as
  // Linux ages an unused neighbour (and with it ipoib_cm's active-side connection: the ARP
  // table's gc_stale_time); 0: never. Tests shorten it.
  std::chrono::milliseconds cm_idle_timeout{60000};
};

struct Counters {
  uint64_t tx_packets = 0, tx_bytes = 0, rx_packets = 0, rx_bytes = 0;
  uint64_t tx_dropped = 0, rx_dropped = 0;
  std::array<uint64_t, static_cast<size_t>(Drop::kCount)> drops{};  // by cause, both ways
};

struct GroupInfo {
  Gid mgid{};
  bool send_only = false;  // a send-only non-member join
  uint16_t mlid = 0;
};

struct InterfaceInfo {
  std::string name;
  Mode mode = Mode::kDatagram;
  uint32_t mtu = 0;  // what the Ethernet face must carry (IP datagram bytes)
  LocalIdentity local;
  uint16_t lid = 0;
  uint8_t active_port = 0;
  bool carrier = false;
  std::vector<GroupInfo> groups;
  std::vector<Neighbour> neighbours;
  Counters counters;
  // (Added by the LBFO work.) An interface over two ports: each port's state, and how many
  // times the active port changed (failovers and failbacks). Empty/0 with one port.
  struct LbfoPort {
    uint8_t port = 0;
    bool carrier = false;
    bool active = false;
    uint32_t qpn = 0;
    uint64_t tx_packets = 0;  // sent through this port's member (balance: its share)
    uint64_t rx_packets = 0;  // delivered to the host from it
  };
  std::vector<LbfoPort> lbfo_ports;
  LbfoMode lbfo = LbfoMode::kActiveStandby;
  uint64_t lbfo_moves = 0;
};

class Driver;
class Interface;

// Loads the driver on a booted node (after the bus driver): it attaches to every IPoIB PDO
// the bus enumerates, now and later. PASSIVE.
kernel::Status LoadDriver(kernel::Node* node, Driver** driver);
// Destroys every interface, detaches and unloads. PASSIVE.
void UnloadDriver(Driver* driver);

// Creates an interface on the config's port(s) and partition. Returns once its QP and
// buffers exist and the face may use Mac()/Mtu(); the carrier comes up later (SetCarrier)
// when the broadcast group is joined. PASSIVE.
kernel::Status CreateInterface(Driver* driver, const InterfaceConfig& config, EthernetFace* face,
                               Interface** interface);
// After return no call reaches the face any more. PASSIVE.
void DestroyInterface(Interface* interface);

// A frame from the host (Ethernet II, no FCS). The driver copies it and never blocks on the
// fabric: a frame that cannot go now is queued briefly (address resolution) or dropped and
// counted. IRQL <= DISPATCH.
void Transmit(Interface* interface, std::span<const uint8_t> frame);

Mac InterfaceMac(Interface* interface);
uint32_t InterfaceMtu(Interface* interface);
kernel::Status Query(Interface* interface, InterfaceInfo* info);

// ---- added by ulp/ipoib/driver ----
// IpAddr (translate.h): an address the host assigned to the interface.
// The host's addresses on the interface now (softibd calls it after `ip addr add/del`):
// each gets an ATS ServiceRecord registered with the SA (service ID 0x10000CE100415453,
// "DAPL Address Translation Service", the address in ServiceData8 — IPv4 at byte 12, as
// the AL's ATS lookups read it), and a record whose address went is deregistered. The
// records are registered again after a port change. IRQL <= DISPATCH; returns at once.
void SetAddresses(Interface* interface, std::span<const IpAddr> addresses);
// The ATS records currently registered (accepted by the SA), for tests and `show`.
size_t RegisteredAtsRecords(Interface* interface);
// The IPoIB PDOs the driver is attached to (tests, diagnostics).
size_t AttachedPorts(Driver* driver);

// ---- added by connected mode (RFC 4755) ----
// Mode::kConnected: the hardware address carries 'C', the MTU is 65520, peers with 'C' get
// an RC connection (CM service ID 0x1000000000000000 | their UD QPN); the mode is chosen
// when the interface is created. The RC connections established now (tests, `show`).
size_t CmConnections(Interface* interface);

}  // namespace softib::ipoib
