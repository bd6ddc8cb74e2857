// The HCA driver of the emulated kernel: owns the software CAs of a node (one hca::Hca
// each, behind a device "hca-<guid>" with the PnP interface class softib.ci enabled), the
// cables between their ports, and the time and packet delivery that drive them (DPCs).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "hca/device/hca.h"
#include "softib/kernel/device.h"
#include "softib/kernel/node.h"
#include "softib/kernel/status.h"

namespace softib::hca {

struct HcaDriver;

// Loads the driver on `node` (no CA yet). PASSIVE.
kernel::Status LoadHcaDriver(kernel::Node* node, HcaDriver** driver);
// Removes every CA still present, then unloads. PASSIVE.
void UnloadHcaDriver(HcaDriver* driver);

// Creates a CA: its device, then the softib.ci interface (arrival for PnP clients). Ports
// come up with LID `first_lid + port - 1` and Active on link up (no SM needed), or, with
// first_lid 0, without a LID in Init until an SM brings them up. RESOURCE_BUSY: GUID
// taken. PASSIVE.
kernel::Status HcaAddCa(HcaDriver* driver, const HcaConfig& config, uint16_t first_lid);

// Surprise removal: an IRP_MN_REMOVE_DEVICE goes down the CA's device stack (filters over
// it tear down first), the CA answers CA_REMOVED from then on, its cables go dead, and the
// device is deleted. INVALID_GUID: no such CA. PASSIVE.
kernel::Status HcaRemoveCa(HcaDriver* driver, uint64_t node_guid);

// Cables port `port_a` of CA `guid_a` to port `port_b` of CA `guid_b` (back to back); the
// link is ACTIVE at once. PASSIVE.
kernel::Status HcaCablePorts(HcaDriver* driver, uint64_t guid_a, uint8_t port_a, uint64_t guid_b,
                             uint8_t port_b);

// Unplugs the cable of port `port` of CA `guid`: both ends go DOWN and their CAs report
// PORT_DOWN (HcaCablePorts reports PORT_ACTIVE on both). INVALID_GUID; INVALID_PORT: no such
// port or not cabled. A CA's removal unplugs its cables the same way. PASSIVE.
kernel::Status HcaUncablePort(HcaDriver* driver, uint64_t guid, uint8_t port);

// Plugs port `port` of CA `guid` into a cable outside this node (a fabric's): what the port
// transmits goes to `out` (which must outlive the plug, and may be called with the CA's lock
// held: it must only queue), and `*inbound` is where the cable delivers what arrives for the
// port, from any thread (it queues onto this node's delivery DPC; after the port is
// unplugged or the CA removed it drops what it is given). The port comes up with its
// configured LID. INVALID_GUID; INVALID_PORT: no such port or already cabled. PASSIVE.
kernel::Status HcaPlugExternal(HcaDriver* driver, uint64_t guid, uint8_t port, Link* out,
                               std::shared_ptr<Link>* inbound);

// The external cable of port `port` of CA `guid` lost its link (`up` false: the far end went
// away, the fabric's flap, a tunnel's missed hellos) or trained again. Down: the port goes
// DOWN (PortPhysicalState Polling) and the CA reports PORT_DOWN, but stays plugged. Up: the
// port comes back as after HcaPlugExternal — INIT when an SM manages it (or it has no LID),
// ACTIVE with its configured LID otherwise (PORT_ACTIVE). Saying the state it is in changes
// nothing. INVALID_GUID; INVALID_PORT: no such port or not plugged by HcaPlugExternal.
// PASSIVE (any thread; takes the driver's mutex and the CA's lock).
kernel::Status HcaSetExternalLinkUp(HcaDriver* driver, uint64_t guid, uint8_t port, bool up);

// The port's own agents (SMA, PMA) answer a 256-byte MAD, as the CI's LocalMad (ci.h):
// for a host program that stands at the port (softibd's ibsim clients). Any thread.
kernel::Status HcaLocalMad(HcaDriver* driver, uint64_t guid, uint8_t port,
                           std::span<const uint8_t, 256> request, std::span<uint8_t, 256> response);

}  // namespace softib::hca
