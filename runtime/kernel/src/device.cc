// Driver and device objects: creation, the node's namespace, device stacks, references.
#include "softib/kernel/device.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "node_impl.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/verifier.h"

namespace softib::kernel {
namespace {

struct DriverImpl : DriverObject {
  std::string name;
  std::atomic<int> references{1};  // the loader's, plus one per live device
  bool unloaded = false;
};

struct DeviceImpl : DeviceObject {
  std::string name;                // empty when unnamed
  std::atomic<int> references{1};  // the creator's, dropped by IoDeleteDevice
  bool deleted = false;
  DeviceObject* attached_to = nullptr;  // the device below (registry mutex)
};

DriverImpl* Impl(DriverObject* driver) { return static_cast<DriverImpl*>(driver); }
DeviceImpl* Impl(DeviceObject* device) { return static_cast<DeviceImpl*>(device); }
DeviceRegistry& Registry(Node* node) { return node->impl().registry; }

void DereferenceDriver(DriverObject* driver) {
  if (Impl(driver)->references.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  DeviceRegistry& registry = Registry(driver->node);
  delete Impl(driver);
  std::lock_guard lock(registry.mutex);
  --registry.drivers;
}

}  // namespace

Status IoCreateDriver(Node* node, const char* name, DriverInitialize init, void* context,
                      DriverObject** driver) {
  VerifyBlockingAllowed("IoCreateDriver");
  auto* created = new DriverImpl{};
  created->node = node;
  created->name = name;
  created->DriverName = created->name.c_str();
  {
    std::lock_guard lock(Registry(node).mutex);
    ++Registry(node).drivers;
  }
  const Status status = init(created, context);
  if (status != Status::SUCCESS) {
    DereferenceDriver(created);
    return status;
  }
  *driver = created;
  return Status::SUCCESS;
}

void IoUnloadDriver(DriverObject* driver) {
  VerifyBlockingAllowed("IoUnloadDriver");
  if (std::exchange(Impl(driver)->unloaded, true)) {
    VerifierFail("IoUnloadDriver: driver %s unloaded twice", driver->DriverName);
  }
  if (driver->Unload != nullptr) driver->Unload(driver);
  DereferenceDriver(driver);
}

Status IoCreateDevice(DriverObject* driver, uint32_t extension_size, const char* name,
                      uint32_t device_type, DeviceObject** device) {
  DeviceRegistry& registry = Registry(driver->node);
  auto* created = new DeviceImpl{};
  created->DriverObject = driver;
  created->StackSize = 1;
  created->DeviceType = device_type;
  if (extension_size > 0) {
    created->DeviceExtension = ::operator new (extension_size, std::align_val_t{16}, std::nothrow);
    if (created->DeviceExtension == nullptr) {
      delete created;
      return Status::INSUFFICIENT_MEMORY;
    }
    std::memset(created->DeviceExtension, 0, extension_size);
  }
  {
    std::lock_guard lock(registry.mutex);
    if (name != nullptr) {
      if (registry.names.contains(name)) {
        ::operator delete (created->DeviceExtension, std::align_val_t{16});
        delete created;
        return Status::RESOURCE_BUSY;
      }
      created->name = name;
      registry.names.emplace(created->name, created);
    }
    ++registry.devices;
  }
  Impl(driver)->references.fetch_add(1, std::memory_order_relaxed);
  *device = created;
  return Status::SUCCESS;
}

void ObReferenceObject(DeviceObject* device) {
  Impl(device)->references.fetch_add(1, std::memory_order_relaxed);
}

void ObDereferenceObject(DeviceObject* device) {
  DeviceImpl* impl = Impl(device);
  const int previous = impl->references.fetch_sub(1, std::memory_order_acq_rel);
  if (previous <= 0) VerifierFail("ObDereferenceObject: device %p has no reference", device);
  if (previous != 1) return;
  DriverObject* driver = device->DriverObject;
  DeviceRegistry& registry = Registry(driver->node);
  ::operator delete (impl->DeviceExtension, std::align_val_t{16});
  delete impl;
  {
    std::lock_guard lock(registry.mutex);
    --registry.devices;
  }
  DereferenceDriver(driver);
}

void IoDeleteDevice(DeviceObject* device) {
  DeviceImpl* impl = Impl(device);
  Node* node = IoGetDeviceNode(device);
  {
    std::lock_guard lock(Registry(node).mutex);
    if (impl->deleted) VerifierFail("IoDeleteDevice: device %p deleted twice", device);
    if (impl->attached_to != nullptr) {
      VerifierFail("IoDeleteDevice: device %p is still attached to %p (IoDetachDevice first)",
                   device, impl->attached_to);
    }
    impl->deleted = true;
    if (!impl->name.empty()) Registry(node).names.erase(impl->name);
  }
  node->impl().pnp.RemoveAllInterfaces(device);
  ObDereferenceObject(device);
}

DeviceObject* IoAttachDeviceToDeviceStack(DeviceObject* source, DeviceObject* target) {
  std::lock_guard lock(Registry(IoGetDeviceNode(target)).mutex);
  DeviceObject* top = target;
  while (top->AttachedDevice != nullptr) top = top->AttachedDevice;
  top->AttachedDevice = source;
  source->StackSize = static_cast<int8_t>(top->StackSize + 1);
  Impl(source)->attached_to = top;
  ObReferenceObject(top);
  return top;
}

void IoDetachDevice(DeviceObject* lower) {
  {
    std::lock_guard lock(Registry(IoGetDeviceNode(lower)).mutex);
    DeviceObject* upper = lower->AttachedDevice;
    if (upper == nullptr) VerifierFail("IoDetachDevice: nothing is attached to %p", lower);
    lower->AttachedDevice = nullptr;
    Impl(upper)->attached_to = nullptr;
  }
  ObDereferenceObject(lower);
}

DeviceObject* IoGetAttachedDeviceReference(DeviceObject* device) {
  std::lock_guard lock(Registry(IoGetDeviceNode(device)).mutex);
  while (device->AttachedDevice != nullptr) device = device->AttachedDevice;
  ObReferenceObject(device);
  return device;
}

DeviceObject* IoGetDeviceByName(Node* node, const char* name) {
  std::lock_guard lock(Registry(node).mutex);
  const auto it = Registry(node).names.find(std::string_view(name));
  if (it == Registry(node).names.end()) return nullptr;
  ObReferenceObject(it->second);
  return it->second;
}

}  // namespace softib::kernel
