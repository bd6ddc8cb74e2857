// The IOU FDO: the bus's second level (WinOFED's bus driver does the same from IBAL's IOC
// PnP). A driver of its own ("ibiou") hears the softib.iou interface of every IOU PDO, as a
// ULP driver would, and attaches an FDO over it. The FDO is a kernel client of the AL
// through IRPs only: it opens the AL device (its file is what the AL resolves handles in;
// an open of the PDO would give the AL no file of its own to see), sends OpenAl and
// RegisterPnp (IOC class) to its PDO, which forwards them to the AL device in the same
// stack location, and keeps one GetPnpEvent IRP pending there, continued in its completion
// routine. Each IOC_ADD for a controller reached through the FDO's CA becomes an IOC PDO
// ("ioc-<IOC GUID>-<CA GUID>", interface softib.ioc, identity IocIdentity), which forwards
// verb IRPs as the other PDOs do; each IOC_REMOVE removes it (REMOVE down its stack, then
// the interface removal). When the IOU PDO goes (its CA removed, or the bus unloading), the
// REMOVE reaches the FDO first: it stops its event IRP, removes its IOC PDOs (they answer
// CA_REMOVED from then on when the CA is gone), closes its AL file and passes the REMOVE on.
//
// The AL reports an I/O unit through the one local port it reached it by, so an IOC
// reachable through two CAs is enumerated under one of them (the one the AL names).
#include <endian.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "pdo.h"
#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/verbs_al.h"
#include "softib/kernel/event.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irp.h"
#include "softib/kernel/pnp.h"
#include "softib/kernel/spin_lock.h"
#include "softib/kernel/work_item.h"

namespace softib::bus {

using kernel::Irp;
using kernel::Status;

struct IouDriver {
  kernel::Node* node = nullptr;
  kernel::DriverObject* driver = nullptr;
  kernel::PnpRegistration* registration = nullptr;
  std::string verb_device_name;
  kernel::DeviceObject* verb_device = nullptr;  // the bus's reference
  std::atomic<size_t> ioc_pdos{0};
};

namespace {

constexpr uint32_t kEventBufferBytes =
    std::max(sizeof(abi::GetPnpEventIn), sizeof(abi::GetPnpEventOut));

// What one FDO keeps; its extension points at it (the extension is freed with the device
// object, which a work item may still hold a moment after the REMOVE deleted it).
struct IouFdoState {
  IouDriver* driver = nullptr;
  kernel::DeviceObject* fdo = nullptr;
  kernel::DeviceObject* lower = nullptr;  // the IOU PDO (attached over; referenced)
  uint64_t ca_guid = 0;                   // host order
  kernel::FileObject* file = nullptr;     // the FDO's kernel-mode open of the AL device
  uint64_t reg = 0;                       // the IOC class registration
  Irp* event_irp = nullptr;               // the GetPnpEvent IRP, reused; freed at REMOVE
  alignas(8) uint8_t event_buffer[kEventBufferBytes] = {};
  kernel::KSpinLock lock;  // removing, in_flight (the completion routine runs at DISPATCH)
  bool removing = false;
  bool in_flight = false;  // event_irp was handed to the PDO and has not completed
  // Set when the event loop has ended for good (nothing of it runs any more but the return
  // of the routine that set it).
  kernel::KEvent stopped{kernel::EventType::kNotification};
  // The IOC PDOs, by IOC GUID: touched only by the loop's work items (one at a time) and,
  // once the loop has stopped, by the REMOVE.
  std::map<uint64_t, kernel::DeviceObject*> iocs;
};

struct IouFdoExtension {
  DeviceTag tag;
  IouFdoState* state;
};

IouFdoState* StateOf(kernel::DeviceObject* fdo) {
  return static_cast<IouFdoExtension*>(fdo->DeviceExtension)->state;
}

uint16_t Be16At(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }
uint32_t Be32At(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3];
}
uint64_t Be64At(const uint8_t* p) { return uint64_t{Be32At(p)} << 32 | Be32At(p + 4); }

// "SRP.T10:<16 hex digits>" in a service entry's name (bytes 0-39; IBA 16.3.3.5) gives the
// SRP target's identifier extension.
bool SrpIdExt(const uint8_t* entry, uint64_t* id_ext) {
  static constexpr char kPrefix[] = "SRP.T10:";
  constexpr size_t kPrefixLength = sizeof kPrefix - 1;
  if (std::memcmp(entry, kPrefix, kPrefixLength) != 0) return false;
  uint64_t value = 0;
  for (size_t i = kPrefixLength; i < kPrefixLength + 16; ++i) {
    const char c = static_cast<char>(entry[i]);
    const int digit = c >= '0' && c <= '9'   ? c - '0'
                      : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                             : -1;
    if (digit < 0) return false;
    value = value << 4 | static_cast<uint64_t>(digit);
  }
  *id_ext = value;
  return true;
}

// The IOC PDO's identity from an IOC event record (IOControllerProfile, IBA 16.3.3.4).
IocIdentity IdentityOf(const abi::PnpEventRecord& record) {
  const uint8_t* profile = record.ioc_profile;
  IocIdentity id{};
  id.pdo.kind = PdoKind::kIoc;
  id.pdo.port = record.port_num;
  id.pdo.ca_guid = be64toh(record.ca_guid);
  id.ioc_guid = Be64At(profile);
  id.vendor_id = Be32At(profile + 8) >> 8;
  id.device_id = Be32At(profile + 12);
  id.device_version = Be16At(profile + 16);
  id.io_class = Be16At(profile + 28);
  id.io_subclass = Be16At(profile + 30);
  id.protocol = Be16At(profile + 32);
  id.protocol_version = Be16At(profile + 34);
  id.iou_lid = record.iou_lid;
  id.iou_port_guid = Be64At(record.iou_gid.raw + 8);
  id.ioc_slot = record.ioc_slot;
  id.num_service_entries = record.num_service_entries;
  if (record.num_service_entries == 0 || !SrpIdExt(record.service_entries, &id.id_ext)) {
    id.id_ext = id.ioc_guid;
  }
  return id;
}

// A synchronous verb IRP through the PDO (PASSIVE: the FDO's start only).
Status SendSync(IouFdoState* s, uint32_t code, const void* in, uint32_t in_length, void* out,
                uint32_t out_length) {
  Irp* irp =
      kernel::IoBuildDeviceIoControlRequest(code, s->lower, in, in_length, out, out_length, true);
  if (irp == nullptr) return Status::INSUFFICIENT_RESOURCES;
  kernel::IoGetNextIrpStackLocation(irp)->FileObject = s->file;
  return kernel::IoCallDriverAndWait(s->lower, irp);
}

void IssueEventIrp(IouFdoState* s);

// Serves one IOC event at PASSIVE, then asks for the next. A work item, because creating
// and deleting device objects and enabling or disabling their interfaces are PASSIVE
// operations, while the event's completion routine may run in a DPC at DISPATCH.
struct EventWork {
  IouFdoState* state;
  kernel::IoWorkItem* item;
  abi::PnpEventRecord record;
};

void OnIocEvent(IouFdoState* s, const abi::PnpEventRecord& record) {
  const IocIdentity identity = IdentityOf(record);
  auto it = s->iocs.find(identity.ioc_guid);
  if (record.event == abi::PnpEvent::IOC_REMOVE) {
    if (it == s->iocs.end()) return;
    RemovePdo(it->second, kIocInterfaceClass);
    s->iocs.erase(it);
    s->driver->ioc_pdos.fetch_sub(1);
    return;
  }
  if (it != s->iocs.end()) return;  // the AL reports a changed controller REMOVE then ADD
  kernel::DeviceObject* pdo = nullptr;
  if (CreatePdo(s->driver->driver, IocPdoName(identity.ioc_guid, s->ca_guid), identity,
                s->driver->verb_device, kIocInterfaceClass, &pdo) == Status::SUCCESS) {
    s->iocs[identity.ioc_guid] = pdo;
    s->driver->ioc_pdos.fetch_add(1);
  }
}

void EventWorkRoutine(kernel::DeviceObject*, void* context) {
  auto* work = static_cast<EventWork*>(context);
  IouFdoState* s = work->state;
  kernel::IoWorkItem* item = work->item;
  OnIocEvent(s, work->record);
  delete work;
  IssueEventIrp(s);
  kernel::IoFreeWorkItem(item);
}

bool ForThisCa(const IouFdoState* s, const abi::PnpEventRecord& record) {
  return (record.event == abi::PnpEvent::IOC_ADD || record.event == abi::PnpEvent::IOC_REMOVE) &&
         be64toh(record.ca_guid) == s->ca_guid;
}

// The GetPnpEvent IRP completed (inline, or in the AL's DPC at DISPATCH). The IRP stays the
// FDO's (kMoreProcessingRequired): it is reused for the next event and freed at REMOVE.
kernel::CompletionAction OnEventComplete(kernel::DeviceObject*, Irp* irp, void* context) {
  auto* s = static_cast<IouFdoState*>(context);
  const Status status = irp->IoStatus.Status;
  abi::GetPnpEventOut out{};
  if (status == Status::SUCCESS && irp->IoStatus.Information >= sizeof out) {
    std::memcpy(&out, s->event_buffer, sizeof out);
  }
  bool removing;
  {
    kernel::SpinLockGuard guard(s->lock);
    s->in_flight = false;
    removing = s->removing;
  }
  if (status != Status::SUCCESS || removing) {
    kernel::KeSetEvent(&s->stopped);  // CANCELED by the REMOVE, or the AL went away
    return kernel::CompletionAction::kMoreProcessingRequired;
  }
  if (!ForThisCa(s, out.record)) {
    IssueEventIrp(s);  // another CA's controller, REG_COMPLETE: nothing to do here
    return kernel::CompletionAction::kMoreProcessingRequired;
  }
  kernel::IoWorkItem* item = kernel::IoAllocateWorkItem(s->fdo);
  kernel::IoQueueWorkItem(item, &EventWorkRoutine, new EventWork{s, item, out.record});
  return kernel::CompletionAction::kMoreProcessingRequired;
}

// Hands the event IRP to the PDO again, unless the REMOVE has begun (the loop then ends
// here). Any IRQL <= DISPATCH.
void IssueEventIrp(IouFdoState* s) {
  Irp* irp = s->event_irp;
  bool removing;
  {
    kernel::SpinLockGuard guard(s->lock);
    removing = s->removing;
    if (!removing) {
      s->in_flight = true;
      kernel::IoReuseIrp(irp, Status::PENDING);
    }
  }
  if (removing) {
    kernel::KeSetEvent(&s->stopped);  // the last touch of `s`: the REMOVE frees it
    return;
  }
  const abi::GetPnpEventIn in{{s->reg}};
  std::memset(s->event_buffer, 0, sizeof s->event_buffer);
  std::memcpy(s->event_buffer, &in, sizeof in);
  irp->AssociatedIrp.SystemBuffer = s->event_buffer;
  irp->UserBuffer = nullptr;
  irp->RequestorMode = kernel::ProcessorMode::kKernelMode;
  kernel::IoStackLocation* next = kernel::IoGetNextIrpStackLocation(irp);
  next->MajorFunction = kernel::IrpMajor::kInternalDeviceControl;
  next->MinorFunction = 0;
  next->Parameters.DeviceIoControl.IoControlCode = abi::kIoctlGetPnpEvent;
  next->Parameters.DeviceIoControl.InputBufferLength = sizeof(abi::GetPnpEventIn);
  next->Parameters.DeviceIoControl.OutputBufferLength = sizeof(abi::GetPnpEventOut);
  next->FileObject = s->file;
  kernel::IoSetCompletionRoutine(irp, &OnEventComplete, s, true, true, true);
  // A REMOVE that cancelled it between the unlock and here: the AL completes an IRP that
  // arrives cancelled at once (CANCELED).
  kernel::IoCallDriver(s->lower, irp);
}

// Opens the AL for the FDO and registers for IOC events (PASSIVE, from the arrival).
Status StartClient(IouFdoState* s) {
  Status status = kernel::IoCreateFile(s->driver->node, s->driver->verb_device_name.c_str(),
                                       kernel::ProcessorMode::kKernelMode, &s->file);
  if (status != Status::SUCCESS) return status;
  const abi::OpenAlIn open{abi::kAlInterfaceVersion, 0};
  abi::OpenAlOut al{};
  status = SendSync(s, abi::kIoctlOpenAl, &open, sizeof open, &al, sizeof al);
  if (status != Status::SUCCESS) return status;
  abi::RegisterPnpIn reg_in{};
  reg_in.al = al.al;
  reg_in.pnp_class = abi::PnpClass::IOC;
  abi::RegisterPnpOut reg{};
  status = SendSync(s, abi::kIoctlRegisterPnp, &reg_in, sizeof reg_in, &reg, sizeof reg);
  if (status != Status::SUCCESS) return status;
  s->reg = reg.reg.value;
  s->event_irp = kernel::IoAllocateIrp(s->lower->StackSize);
  return Status::SUCCESS;
}

// Lets go of everything but the device itself (PASSIVE; the loop has stopped or never ran).
void StopClient(IouFdoState* s, bool ca_removed) {
  for (auto& [guid, pdo] : s->iocs) {
    if (ca_removed) MarkPdoCaRemoved(pdo);
  }
  for (auto& [guid, pdo] : s->iocs) {
    RemovePdo(pdo, kIocInterfaceClass);
    s->driver->ioc_pdos.fetch_sub(1);
  }
  s->iocs.clear();
  if (s->file != nullptr) kernel::IoCloseFile(std::exchange(s->file, nullptr));
  if (s->event_irp != nullptr) kernel::IoFreeIrp(std::exchange(s->event_irp, nullptr));
}

// The IOU PDO's REMOVE (PASSIVE): stop the event loop, remove the IOC PDOs, close the AL
// file, pass the REMOVE down, delete the FDO.
Status OnRemove(kernel::DeviceObject* fdo, Irp* irp) {
  IouFdoState* s = StateOf(fdo);
  bool cancel;
  {
    kernel::SpinLockGuard guard(s->lock);
    s->removing = true;
    cancel = s->in_flight;
  }
  if (cancel) kernel::IoCancelIrp(s->event_irp);
  // In flight: its completion (CANCELED) sets `stopped`; between events: the work item's
  // next issue does.
  kernel::KeWaitForSingleObject(&s->stopped);
  // Whether the IOU PDO's CA is gone (the bus marked it before sending the REMOVE).
  const bool ca_removed = static_cast<PdoExtension*>(s->lower->DeviceExtension)->ca_removed.load();
  StopClient(s, ca_removed);
  kernel::DeviceObject* lower = s->lower;
  kernel::IoDetachDevice(lower);
  kernel::IoSkipCurrentIrpStackLocation(irp);
  const Status status = kernel::IoCallDriver(lower, irp);
  kernel::IoDeleteDevice(fdo);
  delete s;
  return status;
}

Status CompleteIrp(Irp* irp, Status status) {
  irp->IoStatus.Status = status;
  irp->IoStatus.Information = 0;
  kernel::IoCompleteRequest(irp);
  return status;
}

// The IOU driver's dispatch: its IOC PDOs get the PDO dispatch; its FDOs pass everything
// but their REMOVE down to the IOU PDO.
Status Dispatch(kernel::DeviceObject* device, Irp* irp) {
  if (TagOf(device) == DeviceTag::kPdo) return DispatchPdo(device, irp);
  const kernel::IoStackLocation* location = kernel::IoGetCurrentIrpStackLocation(irp);
  if (location->MajorFunction == kernel::IrpMajor::kPnp &&
      location->MinorFunction == kernel::kIrpMinorRemoveDevice) {
    return OnRemove(device, irp);
  }
  IouFdoState* s = StateOf(device);
  if (s == nullptr || s->lower == nullptr) return CompleteIrp(irp, Status::UNSUPPORTED);
  kernel::IoSkipCurrentIrpStackLocation(irp);
  return kernel::IoCallDriver(s->lower, irp);
}

// An IOU PDO arrived: the FDO over it, a client of the AL through it.
void OnIouArrival(const kernel::PnpNotification& notification, void* context) {
  auto* driver = static_cast<IouDriver*>(context);
  if (notification.event != kernel::PnpEvent::kArrival) return;  // its REMOVE came first
  PdoIdentity identity{};
  Irp* query = kernel::IoBuildDeviceIoControlRequest(kIoctlBusQueryIdentity, notification.device,
                                                     nullptr, 0, &identity, sizeof identity, true);
  if (kernel::IoCallDriverAndWait(notification.device, query) != Status::SUCCESS ||
      identity.kind != PdoKind::kIou) {
    return;
  }
  kernel::DeviceObject* fdo = nullptr;
  if (kernel::IoCreateDevice(driver->driver, sizeof(IouFdoExtension), nullptr, 0, &fdo) !=
      Status::SUCCESS) {
    return;
  }
  auto* s = new IouFdoState;
  s->driver = driver;
  s->fdo = fdo;
  s->ca_guid = identity.ca_guid;
  *static_cast<IouFdoExtension*>(fdo->DeviceExtension) = {DeviceTag::kIouFdo, s};
  s->lower = kernel::IoAttachDeviceToDeviceStack(fdo, notification.device);
  if (StartClient(s) != Status::SUCCESS) {
    // Stays attached without IOC PDOs (its REMOVE still comes and finds no loop).
    StopClient(s, false);
    kernel::KeSetEvent(&s->stopped);
    return;
  }
  IssueEventIrp(s);
}

Status IouDriverEntry(kernel::DriverObject* driver, void* context) {
  driver->DriverExtension = context;
  for (auto& dispatch : driver->MajorFunction) dispatch = &Dispatch;
  return Status::SUCCESS;
}

}  // namespace

Status LoadIouDriver(kernel::Node* node, const std::string& verb_device_name,
                     kernel::DeviceObject* verb_device, IouDriver** out) {
  auto* driver = new IouDriver;
  driver->node = node;
  driver->verb_device_name = verb_device_name;
  driver->verb_device = verb_device;
  Status status = kernel::IoCreateDriver(node, "ibiou", &IouDriverEntry, driver, &driver->driver);
  if (status != Status::SUCCESS) {
    delete driver;
    return status;
  }
  status = kernel::IoRegisterPlugPlayNotification(node, kIouInterfaceClass, true, &OnIouArrival,
                                                  driver, &driver->registration);
  if (status != Status::SUCCESS) {
    kernel::IoUnloadDriver(driver->driver);
    delete driver;
    return status;
  }
  *out = driver;
  return Status::SUCCESS;
}

void StopIouArrivals(IouDriver* driver) {
  if (driver->registration != nullptr) {
    kernel::IoUnregisterPlugPlayNotification(std::exchange(driver->registration, nullptr));
  }
}

void UnloadIouDriver(IouDriver* driver) {
  StopIouArrivals(driver);
  kernel::IoUnloadDriver(driver->driver);
  delete driver;
}

size_t IouIocPdoCount(IouDriver* driver) { return driver->ioc_pdos.load(); }

}  // namespace softib::bus
