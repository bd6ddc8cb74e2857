// The AL driver: its device "ibal", the filter devices over the CAs, per-open instances,
// and the dispatch of verb IOCTLs (user files) and internal IOCTLs (kernel clients).
#include <cstring>

#include "kernel/verb_handlers.h"
#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/cm/cm.h"
#include "runtime/al/src/gsi_agent.h"
#include "runtime/al/src/handlers.h"
#include "runtime/al/src/ioc/devmgt_agent.h"
#include "runtime/al/src/ioc/ioc_pnp.h"
#include "runtime/al/src/objects.h"
#include "runtime/al/src/sa/sa_client.h"
#include "softib/ci/ci.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/verb_support.h"
#include "softib/kernel/verb_task.h"
#include "softib/kernel/work_item.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

constexpr uint32_t kFileDeviceInfiniband = 0x3B;

AlDeviceExtension* ExtensionOf(kernel::DeviceObject* device) {
  return static_cast<AlDeviceExtension*>(device->DeviceExtension);
}

Status Complete(Irp* irp, Status status) { return kernel::CompleteVerbIrp(irp, status, 0); }

Status DispatchCreate(kernel::DeviceObject* device, Irp* irp) {
  AlDeviceExtension* ext = ExtensionOf(device);
  kernel::FileObject* file = kernel::IoGetCurrentIrpStackLocation(irp)->FileObject;
  std::shared_ptr<AlCa> ca;
  if (ext->is_filter) {
    for (const auto& known : ext->al->Cas()) {
      if (known->filter == device) ca = known;
    }
    if (ca == nullptr || ca->removed.load()) return Complete(irp, Status::CA_REMOVED);
  }
  auto* instance = new Instance(ext->al, file, std::move(ca));
  const Status status = instance->CreateImplicitAl();
  if (status != Status::SUCCESS) {
    delete instance;
    return Complete(irp, status);
  }
  file->FsContext = instance;
  ext->al->open_files.fetch_add(1, std::memory_order_relaxed);
  return Complete(irp, Status::SUCCESS);
}

Status DispatchCleanup(kernel::DeviceObject*, Irp* irp) {
  kernel::FileObject* file = kernel::IoGetCurrentIrpStackLocation(irp)->FileObject;
  auto* instance = static_cast<Instance*>(file->FsContext);
  const Status status = instance != nullptr ? instance->StartCleanup(irp) : Status::SUCCESS;
  return status == Status::PENDING ? status : Complete(irp, status);
}

Status DispatchClose(kernel::DeviceObject* device, Irp* irp) {
  kernel::FileObject* file = kernel::IoGetCurrentIrpStackLocation(irp)->FileObject;
  if (auto* instance = static_cast<Instance*>(file->FsContext)) {
    file->FsContext = nullptr;
    delete instance;
    ExtensionOf(device)->al->open_files.fetch_sub(1, std::memory_order_relaxed);
  }
  return Complete(irp, Status::SUCCESS);
}

Status DispatchControl(kernel::DeviceObject* device, Irp* irp) {
  kernel::IoStackLocation* location = kernel::IoGetCurrentIrpStackLocation(irp);
  const uint32_t code = location->Parameters.DeviceIoControl.IoControlCode;
  auto* instance = location->FileObject != nullptr
                       ? static_cast<Instance*>(location->FileObject->FsContext)
                       : nullptr;
  if (kernel::IsVerbIoctl(code) && instance != nullptr) {
    return kernel::DispatchVerbIoctl(Handlers(), ContextFor(instance, irp), irp);
  }
  // Anything else sent to a filter belongs to the CA below.
  AlDeviceExtension* ext = ExtensionOf(device);
  if (ext->is_filter && location->MajorFunction == kernel::IrpMajor::kInternalDeviceControl) {
    kernel::IoSkipCurrentIrpStackLocation(irp);
    return kernel::IoCallDriver(ext->lower, irp);
  }
  return Complete(irp, Status::UNSUPPORTED);
}

// Surprise removal of the CA below a filter: the AL lets go of the CA (its users' calls
// fail, events go out), detaches, passes the IRP down, and deletes the filter.
Status DispatchPnp(kernel::DeviceObject* device, Irp* irp) {
  AlDeviceExtension* ext = ExtensionOf(device);
  std::shared_ptr<AlCa> ca;
  for (const auto& known : ext->al->Cas()) {
    if (known->filter == device) ca = known;
  }
  if (!ext->is_filter) return Complete(irp, Status::UNSUPPORTED);
  kernel::DeviceObject* lower = ext->lower;
  if (ca == nullptr) {  // already let go of (AL unload): the CA below still needs the IRP
    kernel::IoSkipCurrentIrpStackLocation(irp);
    return kernel::IoCallDriver(lower, irp);
  }
  const bool remove =
      kernel::IoGetCurrentIrpStackLocation(irp)->MinorFunction == kernel::kIrpMinorRemoveDevice;
  if (remove) {
    ext->al->OnCaRemoval(ca.get());
    kernel::IoDetachDevice(lower);  // before the CA's driver deletes its device
  }
  kernel::IoSkipCurrentIrpStackLocation(irp);
  const Status status = kernel::IoCallDriver(lower, irp);
  if (remove) {
    kernel::KeWaitForSingleObject(&ca->event_irp_home);  // the CA completed it
    ca->filter = nullptr;
    kernel::IoDeleteDevice(device);
  }
  return status;
}

Status DriverEntry(kernel::DriverObject* driver, void* context) {
  auto* al = static_cast<AccessLayer*>(context);
  driver->DriverExtension = al;
  using kernel::IrpMajor;
  driver->MajorFunction[static_cast<int>(IrpMajor::kCreate)] = &DispatchCreate;
  driver->MajorFunction[static_cast<int>(IrpMajor::kCleanup)] = &DispatchCleanup;
  driver->MajorFunction[static_cast<int>(IrpMajor::kClose)] = &DispatchClose;
  driver->MajorFunction[static_cast<int>(IrpMajor::kDeviceControl)] = &DispatchControl;
  driver->MajorFunction[static_cast<int>(IrpMajor::kInternalDeviceControl)] = &DispatchControl;
  driver->MajorFunction[static_cast<int>(IrpMajor::kPnp)] = &DispatchPnp;
  driver->Unload = [](kernel::DriverObject*) {};
  // Verbs callable at DISPATCH never block (the conformance suite runs them there).
  driver->NonBlockingIoctl = &kernel::IsVerbIoctlNonBlocking;
  kernel::DeviceObject* device = nullptr;
  const Status status = kernel::IoCreateDevice(driver, sizeof(AlDeviceExtension), kAlDeviceName,
                                               kFileDeviceInfiniband, &device);
  if (status != Status::SUCCESS) return status;
  *ExtensionOf(device) = {false, al, nullptr};
  al->device = device;
  return Status::SUCCESS;
}

void OnCiInterface(const kernel::PnpNotification& notification, void* context) {
  auto* al = static_cast<AccessLayer*>(context);
  if (notification.event == kernel::PnpEvent::kArrival) al->OnCaArrival(notification.device);
  // Removal arrives as the remove IRP through the filter; the interface notice adds nothing.
}

}  // namespace

// Creates the filter over a CA device (pnp.cc calls it at arrival).
Status CreateFilter(AccessLayer* al, AlCa* ca) {
  kernel::DeviceObject* filter = nullptr;
  const Status status = kernel::IoCreateDevice(al->driver, sizeof(AlDeviceExtension), nullptr,
                                               kFileDeviceInfiniband, &filter);
  if (status != Status::SUCCESS) return status;
  *ExtensionOf(filter) = {true, al, ca->lower};
  ca->filter = filter;
  kernel::IoAttachDeviceToDeviceStack(filter, ca->lower);
  return Status::SUCCESS;
}

// ---- Instance ------------------------------------------------------------------------------

Instance::Instance(AccessLayer* al_in, kernel::FileObject* file_in, std::shared_ptr<AlCa> ca)
    : al(al_in),
      file(file_in),
      pid(file_in != nullptr && file_in->RequestorMode == kernel::ProcessorMode::kUserMode
              ? file_in->ProcessId
              : 0),
      bound_ca(std::move(ca)),
      table(al_in->node) {}

Instance::~Instance() { Cleanup(); }

Status Instance::CreateImplicitAl() {
  auto* object = new AlObj(this);
  return Publish(this, object, &al_handle);
}

std::size_t Instance::CancelPendingIrps(uint32_t function, uint64_t object_id) {
  std::vector<kernel::ObjectRef> targets;
  {
    kernel::SpinLockGuard guard(waitables_lock);
    for (kernel::KernelObject* object : waitables) {
      auto* waitable = static_cast<Waitable*>(object);
      if (function != 0 && waitable->function != function) continue;
      if (object_id != 0 && waitable->handle != object_id) continue;
      kernel::ReferenceObject(object);
      targets.emplace_back(object);
    }
  }
  std::size_t n = 0;
  for (auto& ref : targets) n += static_cast<Waitable*>(ref.get())->waiters.CancelAll();
  return n;
}

namespace {

// Continues `resume` at PASSIVE: inline when the caller is there, else from a work item (a
// release's completion runs in a DPC, and the OnDestroy of the objects the cleanup
// destroys next — CEPs, SA registrations — may take FastMutexes).
void ResumeAtPassive(AccessLayer* al, std::function<void()> resume) {
  if (kernel::CurrentIrql() == kernel::Irql::kPassive) {
    resume();
    return;
  }
  struct Hop {
    std::function<void()> resume;
    kernel::IoWorkItem* item;
  };
  auto* hop = new Hop{std::move(resume), kernel::IoAllocateWorkItem(al->device)};
  kernel::IoQueueWorkItem(
      hop->item,
      [](kernel::DeviceObject*, void* context) {
        auto* h = static_cast<Hop*>(context);
        kernel::IoFreeWorkItem(h->item);
        std::function<void()> next = std::move(h->resume);
        delete h;
        next();
      },
      hop);
}

// The file's objects, children first: each pass destroys what has no children left (their
// releases' CI IRPs go out together), then waits until every release of the file has
// completed — which frees their parents — and goes again. A pass that finds nothing to
// destroy with nothing in flight forces the newest (its children live in another file).
kernel::VerbTask CleanupTask(Instance* instance) {
  std::size_t left = instance->table.CloseIdle();
  for (;;) {
    co_await AwaitDone([instance](std::function<void()> resume) {
      instance->state->WhenIdle([al = instance->al, resume = std::move(resume)]() mutable {
        ResumeAtPassive(al, std::move(resume));
      });
    });
    if (left == 0) break;
    const std::size_t now = instance->table.CloseIdle();
    if (now == left && instance->table.ForceNewest()) {
      left = instance->table.size();
    } else {
      left = now;
    }
  }
  co_return {Status::SUCCESS, 0};
}

}  // namespace

Status Instance::StartCleanup(Irp* irp) {
  CancelPendingIrps(0, 0);
  return CleanupTask(this).Start(irp);
}

void Instance::Cleanup() {
  CancelPendingIrps(0, 0);
  (void)CleanupTask(this).Start(nullptr);
}

Instance* InstanceOf(const kernel::CallContext& ctx) {
  if (ctx.al != nullptr) return ctx.al->instance;
  return static_cast<Instance*>(ctx.file->FsContext);
}

kernel::CallContext ContextFor(Instance* instance, Irp* irp) {
  kernel::CallContext ctx;
  ctx.node = instance->al->node;
  ctx.handles = &instance->table;
  ctx.file = instance->file;
  ctx.al = instance->ib_al;
  ctx.requestor_mode = irp != nullptr ? irp->RequestorMode : kernel::ProcessorMode::kKernelMode;
  return ctx;
}

// ---- AccessLayer ---------------------------------------------------------------------------

std::shared_ptr<AlCa> AccessLayer::FindCa(uint64_t guid) {
  kernel::SpinLockGuard guard(lock);
  for (const auto& ca : cas) {
    if (ca->guid == guid && !ca->removed.load()) return ca;
  }
  return nullptr;
}

std::vector<std::shared_ptr<AlCa>> AccessLayer::Cas() {
  kernel::SpinLockGuard guard(lock);
  return cas;
}

AccessLayer::AccessLayer(kernel::Node* n) : node(n) {}
AccessLayer::~AccessLayer() = default;

Status LoadAccessLayer(kernel::Node* node, AccessLayer** out) {
  auto al = std::make_unique<AccessLayer>(node);
  Status status = kernel::IoCreateDriver(node, "softib_al", &DriverEntry, al.get(), &al->driver);
  if (status != Status::SUCCESS) return status;
  al->sa_client = std::make_shared<sa::SaClient>(al.get());
  al->sa_client->Start();                         // its agents start with each CA's arrival
  al->devmgt_agent = StartDevMgtAgent(al.get());  // on every CA from its arrival
  al->ioc_pnp = std::make_unique<ioc::IocPnp>(al.get());
  al->cm = new cm::ConnectionManager(al.get());  // its agents start with each CA
  status = kernel::IoRegisterPlugPlayNotification(node, ci::kCiInterfaceClass, true, &OnCiInterface,
                                                  al.get(), &al->ci_registration);
  if (status != Status::SUCCESS) {
    delete al->cm;
    al->ioc_pnp->Stop();
    al->sa_client->Stop();
    kernel::IoDeleteDevice(al->device);
    kernel::IoUnloadDriver(al->driver);
    return status;
  }
  *out = al.release();
  return Status::SUCCESS;
}

void UnloadAccessLayer(AccessLayer* al) {
  kernel::IoUnregisterPlugPlayNotification(al->ci_registration);
  al->ioc_pnp->Stop();  // before the agents its sweep asks through
  al->devmgt_agent.reset();
  // The CAs still present: let go of them as a removal would, without the IRP.
  for (const auto& ca : al->Cas()) {
    al->OnCaRemoval(ca.get());
    // The event IRP comes home once cancelled; one re-sent by the DPC in the meantime
    // is cancelled again (IoReuseIrp clears the cancel flag).
    while (ca->event_irp != nullptr &&
           kernel::KeWaitForSingleObject(&ca->event_irp_home, std::chrono::milliseconds(0)) !=
               Status::SUCCESS) {
      kernel::IoCancelIrp(ca->event_irp);
      kernel::KeWaitForSingleObject(&ca->event_irp_home, std::chrono::milliseconds(5));
    }
    if (ca->filter != nullptr) {
      kernel::IoDetachDevice(ca->lower);
      kernel::IoDeleteDevice(ca->filter);
      ca->filter = nullptr;
    }
  }
  kernel::KeFlushQueuedDpcs(al->node);
  delete std::exchange(al->cm, nullptr);
  {
    kernel::SpinLockGuard guard(al->lock);
    al->cas.clear();
  }
  al->sa_client->Stop();
  kernel::IoDeleteDevice(al->device);
  kernel::IoUnloadDriver(al->driver);
  delete al;
}

}  // namespace softib::al
