// The HCA driver: CA devices, their dispatch (CI query, event waits, removal), cables.
#include "softib/hca/hca_driver.h"

#include <map>
#include <memory>
#include <vector>

#include "hca/driver/src/port_link.h"
#include "hca/driver/src/ring_service.h"
#include "hca/driver/src/soft_ca.h"
#include "kernel/hca/ci_dispatch.h"
#include "softib/kernel/io.h"
#include "softib/kernel/mutex.h"
#include "softib/kernel/pnp.h"
#include "softib/kernel/verb_support.h"

namespace softib::hca {

using kernel::Status;

// What HcaDriver holds per CA: outside the anonymous namespace, as HcaDriver (declared in
// the public header) is. The far end of a cabled port:
struct PeerPort {
  uint64_t guid = 0;  // 0: not cabled; kExternalPeer: plugged into a fabric's cable
  uint8_t port = 0;
  Link* external = nullptr;  // kExternalPeer: where the port transmits while its link is up
};
inline constexpr uint64_t kExternalPeer = ~uint64_t{0};

// One CA of the driver:
struct CaEntry {
  SoftCa* ca = nullptr;
  kernel::DeviceObject* device = nullptr;
  // Per port: the transmit side of a cable to another CA of this node, or the receive side of
  // an external cable (a fabric's delivers into it).
  std::vector<std::shared_ptr<PortLink>> links;
  std::vector<PeerPort> peers;  // index: port - 1
};

namespace {

constexpr uint32_t kFileDeviceInfiniband = 0x3B;

struct CaExtension {
  SoftCa* ca;  // the device's reference
};

SoftCa* CaOf(kernel::DeviceObject* device) {
  return static_cast<CaExtension*>(device->DeviceExtension)->ca;
}

Status CompleteWith(kernel::Irp* irp, Status status) {
  return kernel::CompleteVerbIrp(irp, status, 0);
}

Status DispatchCreateClose(kernel::DeviceObject*, kernel::Irp* irp) {
  return CompleteWith(irp, Status::SUCCESS);
}

Status DispatchInternal(kernel::DeviceObject* device, kernel::Irp* irp) {
  SoftCa* ca = CaOf(device);
  const auto& params = kernel::IoGetCurrentIrpStackLocation(irp)->Parameters.DeviceIoControl;
  switch (params.IoControlCode) {
    case ci::kIoctlCiQueryInterface: {
      if (params.OutputBufferLength < sizeof(ci::CiQueryInterfaceOut)) {
        return CompleteWith(irp, Status::INVALID_PARAMETER);
      }
      if (ca->removed()) return CompleteWith(irp, Status::CA_REMOVED);
      ca->Reference();
      static_cast<ci::CiQueryInterfaceOut*>(irp->AssociatedIrp.SystemBuffer)->ci = ca;
      return kernel::CompleteVerbIrp(irp, Status::SUCCESS, sizeof(ci::CiQueryInterfaceOut));
    }
    case ci::kIoctlCiWaitEvents:
      return ca->WaitEvents(irp);
    default:
      // The CI verbs as IRPs (idl/ci.idl): the generated dispatch checks the requestor and
      // the request, then SoftCa's handlers (ci_handlers.cc) run.
      if (kernel::IsCiIoctl(params.IoControlCode)) return kernel::DispatchCiIoctl(*ca, irp);
      return CompleteWith(irp, Status::UNSUPPORTED);
  }
}

// The bottom of the CA's stack: the filters above have already let go of the CA.
Status DispatchPnp(kernel::DeviceObject* device, kernel::Irp* irp) {
  if (kernel::IoGetCurrentIrpStackLocation(irp)->MinorFunction != kernel::kIrpMinorRemoveDevice) {
    return CompleteWith(irp, Status::UNSUPPORTED);
  }
  CaOf(device)->MarkRemoved();
  kernel::IoSetDeviceInterfaceState(device, ci::kCiInterfaceClass, false);
  return CompleteWith(irp, Status::SUCCESS);
}

Status DriverEntry(kernel::DriverObject* driver, void* context) {
  driver->DriverExtension = context;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kCreate)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kCleanup)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kClose)] = &DispatchCreateClose;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kInternalDeviceControl)] =
      &DispatchInternal;
  driver->MajorFunction[static_cast<int>(kernel::IrpMajor::kPnp)] = &DispatchPnp;
  driver->Unload = [](kernel::DriverObject*) {};  // CAs are removed before unload
  return Status::SUCCESS;
}

}  // namespace

struct HcaDriver {
  explicit HcaDriver(kernel::Node* n) : node(n), wire(n), rings(n, &wire) {}
  kernel::Node* node;
  kernel::DriverObject* driver = nullptr;
  PacketWire wire;
  RingService rings;                // the speed path's thread, started by the first ring mapping
  kernel::FastMutex mutex;          // PASSIVE configuration changes
  std::map<uint64_t, CaEntry> cas;  // by node GUID; mutex held

  // Unplugs port `port` of `entry` (mutex held): the port and its peer go DOWN (their CAs
  // report PORT_DOWN), and each end's transmit side is cut. Links are handed to `dead` and
  // freed by the caller once nothing can transmit on them.
  void Unplug(CaEntry& entry, uint8_t port, std::vector<std::shared_ptr<PortLink>>* dead) {
    const PeerPort peer = entry.peers[port - 1];
    if (peer.guid == 0) return;
    // The CA lock orders this against a transmit in progress: after SetPortLink no new
    // packet goes out on the link.
    entry.ca->SetPortLink(port, nullptr);
    wire.Cut(entry.links[port - 1].get());
    dead->push_back(std::move(entry.links[port - 1]));
    entry.peers[port - 1] = {};
    auto other = cas.find(peer.guid);
    if (other == cas.end()) return;
    CaEntry& far = other->second;
    far.ca->SetPortLink(peer.port, nullptr);
    wire.Cut(far.links[peer.port - 1].get());
    dead->push_back(std::move(far.links[peer.port - 1]));
    far.peers[peer.port - 1] = {};
  }

  std::vector<PortLink*> AllLinks() {
    std::vector<PortLink*> links;
    for (auto& [guid, entry] : cas) {
      for (auto& link : entry.links) {
        if (link) links.push_back(link.get());
      }
    }
    return links;
  }
};

Status LoadHcaDriver(kernel::Node* node, HcaDriver** out) {
  auto driver = std::make_unique<HcaDriver>(node);
  const Status status =
      kernel::IoCreateDriver(node, "softib_hca", &DriverEntry, driver.get(), &driver->driver);
  if (status != Status::SUCCESS) return status;
  *out = driver.release();
  return Status::SUCCESS;
}

void UnloadHcaDriver(HcaDriver* driver) {
  std::vector<uint64_t> guids;
  driver->mutex.Acquire();
  for (const auto& [guid, entry] : driver->cas) guids.push_back(guid);
  driver->mutex.Release();
  for (const uint64_t guid : guids) HcaRemoveCa(driver, guid);
  driver->rings.Stop();
  driver->wire.DeliverQueued();             // what the service thread left: to removed CAs
  kernel::KeFlushQueuedDpcs(driver->node);  // packets still queued go nowhere harmful
  kernel::IoUnloadDriver(driver->driver);
  delete driver;
}

Status HcaAddCa(HcaDriver* driver, const HcaConfig& config, uint16_t first_lid) {
  const std::string name = ci::CaDeviceName(config.node_guid);
  driver->mutex.Acquire();
  if (driver->cas.count(config.node_guid) != 0) {
    driver->mutex.Release();
    return Status::RESOURCE_BUSY;
  }
  auto* ca = new SoftCa(driver->node, config, first_lid, &driver->rings);
  kernel::DeviceObject* device = nullptr;
  Status status = kernel::IoCreateDevice(driver->driver, sizeof(CaExtension), name.c_str(),
                                         kFileDeviceInfiniband, &device);
  if (status != Status::SUCCESS) {
    driver->mutex.Release();
    ca->Dereference();
    return status;
  }
  static_cast<CaExtension*>(device->DeviceExtension)->ca = ca;
  ca->device = device;
  CaEntry& entry = driver->cas[config.node_guid];
  entry.ca = ca;
  entry.device = device;
  entry.links.resize(config.num_ports);
  entry.peers.resize(config.num_ports);
  driver->mutex.Release();
  return kernel::IoSetDeviceInterfaceState(device, ci::kCiInterfaceClass, true);
}

Status HcaCablePorts(HcaDriver* driver, uint64_t guid_a, uint8_t port_a, uint64_t guid_b,
                     uint8_t port_b) {
  driver->mutex.Acquire();
  auto a = driver->cas.find(guid_a);
  auto b = driver->cas.find(guid_b);
  Status status = Status::SUCCESS;
  if (a == driver->cas.end() || b == driver->cas.end()) {
    status = Status::INVALID_GUID;
  } else if (port_a == 0 || port_a > a->second.links.size() || port_b == 0 ||
             port_b > b->second.links.size() || a->second.links[port_a - 1] ||
             b->second.links[port_b - 1]) {
    status = Status::INVALID_PORT;
  } else {
    a->second.links[port_a - 1] = std::make_shared<PortLink>(&driver->wire, b->second.ca, port_b);
    b->second.links[port_b - 1] = std::make_shared<PortLink>(&driver->wire, a->second.ca, port_a);
    a->second.peers[port_a - 1] = {guid_b, port_b};
    b->second.peers[port_b - 1] = {guid_a, port_a};
    // Both ends go ACTIVE (LIDs are set, no SM yet): each CA reports PORT_ACTIVE.
    a->second.ca->SetPortLink(port_a, a->second.links[port_a - 1].get());
    b->second.ca->SetPortLink(port_b, b->second.links[port_b - 1].get());
  }
  driver->mutex.Release();
  return status;
}

Status HcaPlugExternal(HcaDriver* driver, uint64_t guid, uint8_t port, Link* out,
                       std::shared_ptr<Link>* inbound) {
  driver->mutex.Acquire();
  auto it = driver->cas.find(guid);
  Status status = Status::SUCCESS;
  if (it == driver->cas.end()) {
    status = Status::INVALID_GUID;
  } else if (port == 0 || port > it->second.links.size() || it->second.links[port - 1]) {
    status = Status::INVALID_PORT;
  } else {
    // The receive side: a link whose far end is this CA's own port.
    auto receiver = std::make_shared<PortLink>(&driver->wire, it->second.ca, port);
    it->second.links[port - 1] = receiver;
    it->second.peers[port - 1] = {kExternalPeer, 0, out};
    it->second.ca->SetPortLink(port, out);
    *inbound = std::move(receiver);
  }
  driver->mutex.Release();
  return status;
}

Status HcaSetExternalLinkUp(HcaDriver* driver, uint64_t guid, uint8_t port, bool up) {
  driver->mutex.Acquire();
  auto it = driver->cas.find(guid);
  Status status = Status::SUCCESS;
  if (it == driver->cas.end()) {
    status = Status::INVALID_GUID;
  } else if (port == 0 || port > it->second.peers.size() ||
             it->second.peers[port - 1].guid != kExternalPeer) {
    status = Status::INVALID_PORT;
  } else {
    // The device's port without a link is DOWN/Polling, and a link that comes back brings
    // an SM-managed port up in INIT (hca::Hca::SetPortLink). The receive side stays: the
    // fabric delivers nothing on a cable that is down.
    it->second.ca->SetPortLink(port, up ? it->second.peers[port - 1].external : nullptr);
  }
  driver->mutex.Release();
  return status;
}

Status HcaLocalMad(HcaDriver* driver, uint64_t guid, uint8_t port,
                   std::span<const uint8_t, 256> request, std::span<uint8_t, 256> response) {
  SoftCa* ca = nullptr;
  driver->mutex.Acquire();
  if (auto it = driver->cas.find(guid); it != driver->cas.end()) {
    ca = it->second.ca;
    ca->Reference();
  }
  driver->mutex.Release();
  if (ca == nullptr) return Status::INVALID_GUID;
  const Status status = ca->LocalMad(port, request, response);
  ca->Dereference();
  return status;
}

Status HcaUncablePort(HcaDriver* driver, uint64_t guid, uint8_t port) {
  std::vector<std::shared_ptr<PortLink>> dead;
  driver->mutex.Acquire();
  auto it = driver->cas.find(guid);
  Status status = Status::SUCCESS;
  if (it == driver->cas.end()) {
    status = Status::INVALID_GUID;
  } else if (port == 0 || port > it->second.peers.size() || it->second.peers[port - 1].guid == 0) {
    status = Status::INVALID_PORT;
  } else {
    driver->Unplug(it->second, port, &dead);
  }
  driver->mutex.Release();
  // Packets already queued name their CA, not the link: the links can go now.
  return status;
}

Status HcaRemoveCa(HcaDriver* driver, uint64_t node_guid) {
  driver->mutex.Acquire();
  auto it = driver->cas.find(node_guid);
  if (it == driver->cas.end()) {
    driver->mutex.Release();
    return Status::INVALID_GUID;
  }
  // The peers of its cabled ports lose their link (PORT_DOWN on their CAs); nothing
  // reaches the CA any more, and what is queued for it is dropped on delivery.
  std::vector<std::shared_ptr<PortLink>> dead;
  for (uint8_t p = 1; p <= it->second.peers.size(); ++p) driver->Unplug(it->second, p, &dead);
  CaEntry entry = std::move(it->second);
  driver->cas.erase(it);
  driver->wire.CutAllTo(driver->AllLinks(), entry.ca);
  for (auto& link : entry.links) {
    if (link) driver->wire.Cut(link.get());
  }
  driver->mutex.Release();

  // IRP_MN_REMOVE_DEVICE down the whole stack: filters first, the CA last.
  kernel::DeviceObject* top = kernel::IoGetAttachedDeviceReference(entry.device);
  kernel::Irp* irp = kernel::IoAllocateIrp(top->StackSize);
  kernel::IoStackLocation* next = kernel::IoGetNextIrpStackLocation(irp);
  next->MajorFunction = kernel::IrpMajor::kPnp;
  next->MinorFunction = kernel::kIrpMinorRemoveDevice;
  kernel::IoCallDriverAndWait(top, irp);
  kernel::IoFreeIrp(irp);
  kernel::ObDereferenceObject(top);

  for (uint8_t p = 1; p <= entry.links.size(); ++p) entry.ca->SetPortLink(p, nullptr);
  kernel::IoDeleteDevice(entry.device);
  entry.ca->Dereference();
  return Status::SUCCESS;
}

}  // namespace softib::hca
