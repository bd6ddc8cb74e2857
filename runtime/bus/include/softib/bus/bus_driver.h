// The IB bus driver (WinOFED's ibbus role): for every CA that arrives (the softib.ci
// interface of the HCA driver), it enumerates one IPoIB PDO per port and one IOU PDO, each
// with its own interface class so that ULP drivers load on them; when the CA goes, it
// removes them (IRP_MN_REMOVE_DEVICE down each stack, then the interface removal events).
// It listens for PnP notifications only: it never calls up and holds no CI reference
// longer than the arrival that reads the CA's port count.
//
// A PDO owns its identity query (kIoctlBusQueryIdentity) and its PnP IRPs; every other
// device-control IRP (IRP_MJ_DEVICE_CONTROL and IRP_MJ_INTERNAL_DEVICE_CONTROL: a kernel
// ULP's verb IOCTLs, sent to the PDO of its devnode) goes on to the PDO's parent, the
// device that carries the verbs (BusOptions::verb_device, which the node stack names), in
// the same stack location: the ULP's file on that device (its kernel-mode AL open) reaches
// it unchanged, so the verbs resolve in the ULP's own handle table. A PDO whose CA was
// removed (between the CA's removal and the PDO's deletion) completes them CA_REMOVED.
//
// The bus's second level (the seeds' load order: HCA FDO → bus → IPoIB PDO / IOU FDO → IOC
// PDOs → ULP FDOs): with a verb device (and BusOptions::iou_driver), the bus loads its IOU
// driver, which attaches an FDO over each IOU PDO as a ULP would. The FDO is a kernel
// client of the AL by IRPs only, sent to its PDO (which forwards them): it opens the AL
// device (a kernel-mode file, in which the AL keeps its handles), OpenAl, RegisterPnp for
// the IOC class, and one GetPnpEvent IRP kept pending, continued in its completion routine.
// An IOC_ADD for a controller reached through its CA creates an IOC PDO (IocPdoName,
// softib.ioc, identity IocIdentity) that forwards verb IRPs like the others; IOC_REMOVE, the
// CA's removal or the bus's unload removes it (REMOVE down its stack, then the interface
// removal; after a CA removal it answers CA_REMOVED meanwhile). The IOU PDO's REMOVE reaches
// the FDO first, which removes its IOC PDOs before passing it on.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "softib/kernel/node.h"
#include "softib/kernel/status.h"

namespace softib::bus {

// Interface classes enabled on the PDOs.
inline constexpr char kIpoibInterfaceClass[] = "softib.ipoib";
inline constexpr char kIouInterfaceClass[] = "softib.iou";
inline constexpr char kIocInterfaceClass[] = "softib.ioc";

// What a PDO stands for; a ULP learns it with kIoctlBusQueryIdentity.
enum class PdoKind : uint32_t { kIpoibPort = 1, kIou = 2, kIoc = 3 };
struct PdoIdentity {
  PdoKind kind;
  uint8_t port;  // 0 for the IOU; the IOC's: the local port its I/O unit is reached through
  uint8_t reserved[3];
  uint64_t ca_guid;  // host order
};

// What an IOC PDO adds (its identity query answers the whole struct to an output buffer
// that large, the PdoIdentity prefix to a smaller one): the fields an SRP initiator
// matches a target on, from the IOControllerProfile (IBA 16.3.3.4) the AL reported.
// Host order throughout.
struct IocIdentity {
  PdoIdentity pdo;    // kind kIoc, port, ca_guid
  uint64_t ioc_guid;  // profile bytes 0-7
  // The target's identifier extension: the hex digits after "SRP.T10:" in the name of the
  // controller's first service entry when it has that form (an SRP target's), else the IOC
  // GUID.
  uint64_t id_ext;
  uint64_t iou_port_guid;     // the I/O unit's port (the GUID of its port GID)
  uint32_t vendor_id;         // 24 bits, profile bytes 8-10
  uint32_t device_id;         // bytes 12-15
  uint16_t device_version;    // bytes 16-17
  uint16_t io_class;          // bytes 28-29 (0x0100: SRP)
  uint16_t io_subclass;       // bytes 30-31 (0x609E: the SRP subclass)
  uint16_t protocol;          // bytes 32-33 (0x0108: SRP)
  uint16_t protocol_version;  // bytes 34-35
  uint16_t iou_lid;           // the unit's port
  uint8_t ioc_slot;           // 1..16 in the unit
  uint8_t num_service_entries;
  uint8_t reserved[2];
};

// Internal device control on a PDO (kernel callers): output PdoIdentity (an IOC PDO:
// IocIdentity, or its PdoIdentity prefix to a buffer shorter than that).
inline constexpr uint32_t kIoctlBusQueryIdentity = 0x0022E100;

// PDO device names: "ipoib-<16 hex digits>-<port>", "iou-<16 hex digits>" and
// "ioc-<16 hex digits of the IOC GUID>-<16 hex digits of the CA GUID>".
std::string IpoibPdoName(uint64_t ca_guid, uint8_t port);
std::string IouPdoName(uint64_t ca_guid);
std::string IocPdoName(uint64_t ioc_guid, uint64_t ca_guid);

struct BusDriver;

struct BusOptions {
  // The named device the PDOs forward verb IRPs to (the AL device, "ibal"); it must exist
  // when the bus loads, and the bus holds a reference on it until it unloads (so the bus
  // unloads before that device's driver). Empty: PDOs answer those IRPs UNSUPPORTED.
  std::string verb_device;
  // With a verb device: load the IOU driver too (its FDOs open that device as the AL).
  bool iou_driver = true;
};

// Loads the bus driver: CAs already present arrive at once. With a verb device, the IOU
// driver too (iou_fdo.cc: an FDO over each IOU PDO, enumerating IOC PDOs from the AL's IOC
// PnP events, which it gets by IRPs sent through its PDO). NOT_FOUND when
// options.verb_device names no device. PASSIVE.
kernel::Status LoadBusDriver(kernel::Node* node, BusDriver** bus, const BusOptions& options = {});
// Stops listening, removes every PDO, unloads. PASSIVE.
void UnloadBusDriver(BusDriver* bus);

// PDOs currently enumerated (tests, diagnostics): the IPoIB and IOU PDOs, and the IOC PDOs.
size_t BusPdoCount(BusDriver* bus);
size_t BusIocPdoCount(BusDriver* bus);

// Waits until the bus has enumerated the PDOs of CA `guid` (host order) or, with `present`
// false, has removed them (arrivals and removals are PnP notifications, handled on a
// worker). TIMEOUT otherwise. PASSIVE.
kernel::Status WaitForBusCa(BusDriver* bus, uint64_t guid, bool present,
                            std::chrono::milliseconds timeout = std::chrono::seconds(10));

}  // namespace softib::bus
