// Device-interface notifications: one ordered event queue per node, drained on a worker.
#include "softib/kernel/pnp.h"

#include <algorithm>

#include "node_impl.h"
#include "softib/kernel/device.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/verifier.h"

namespace softib::kernel {

struct PnpRegistration {
  PnpManager* manager;
  std::string interface_class;
  PnpCallback callback;
  void* context;
  uint64_t serial;
  // Guarded by the manager's mutex.
  bool active = true;
  int references = 1;  // the manager's list, plus each queued event and delivery holding it
  int in_flight = 0;
  std::thread::id calling_thread{};
};

PnpManager::PnpManager(Node* node) : node_(node) {}

PnpManager::~PnpManager() {
  // The node drained the events; what is left are clients that never unregistered.
  for (PnpRegistration* registration : registrations_) delete registration;
}

void PnpManager::QueueLocked(Event event) {
  events_.push_back(std::move(event));
  if (!draining_) {
    draining_ = true;
    node_->impl().work.Queue([this] { Drain(); });
  }
}

void PnpManager::Drain() {
  std::unique_lock lock(mutex_);
  while (!events_.empty()) {
    Event event = std::move(events_.front());
    events_.pop_front();
    std::vector<PnpRegistration*> targets;
    if (event.only != nullptr) {
      targets.push_back(event.only);  // its reference was taken when queued
    } else {
      for (PnpRegistration* registration : registrations_) {
        if (registration->serial < event.registrations_before &&
            registration->interface_class == event.interface_class) {
          ++registration->references;
          targets.push_back(registration);
        }
      }
    }
    for (PnpRegistration* registration : targets) {
      if (registration->active) {
        ++registration->in_flight;
        registration->calling_thread = std::this_thread::get_id();
        lock.unlock();
        registration->callback({event.event, event.interface_class, event.device},
                               registration->context);
        lock.lock();
        --registration->in_flight;
        cv_.notify_all();
      }
      if (--registration->references == 0) delete registration;
    }
    lock.unlock();
    ObDereferenceObject(event.device);
    lock.lock();
  }
  draining_ = false;
}

Status PnpManager::Register(const std::string& interface_class, bool include_existing,
                            PnpCallback callback, void* context, PnpRegistration** out) {
  if (callback == nullptr) return Status::INVALID_PARAMETER;
  std::lock_guard lock(mutex_);
  auto* registration =
      new PnpRegistration{this, interface_class, callback, context, next_serial_++};
  registrations_.push_back(registration);
  if (include_existing) {
    for (const auto& [device, name] : interfaces_) {
      if (name != interface_class) continue;
      ObReferenceObject(device);
      ++registration->references;
      QueueLocked({PnpEvent::kArrival, name, device, registration, 0});
    }
  }
  *out = registration;
  return Status::SUCCESS;
}

void PnpManager::Unregister(PnpRegistration* registration) {
  std::unique_lock lock(mutex_);
  registration->active = false;
  registrations_.erase(std::find(registrations_.begin(), registrations_.end(), registration));
  const bool from_own_callback =
      registration->in_flight > 0 && registration->calling_thread == std::this_thread::get_id();
  if (!from_own_callback) {
    if (registration->in_flight > 0) VerifyBlockingAllowed("IoUnregisterPlugPlayNotification");
    cv_.wait(lock, [registration] { return registration->in_flight == 0; });
  }
  if (--registration->references == 0) delete registration;
}

Status PnpManager::SetInterfaceState(DeviceObject* device, const std::string& interface_class,
                                     bool enable) {
  std::lock_guard lock(mutex_);
  const auto it =
      std::find(interfaces_.begin(), interfaces_.end(), std::pair{device, interface_class});
  if (enable == (it != interfaces_.end())) return Status::INVALID_STATE;
  if (enable) {
    interfaces_.emplace_back(device, interface_class);
  } else {
    interfaces_.erase(it);
  }
  ObReferenceObject(device);
  QueueLocked({enable ? PnpEvent::kArrival : PnpEvent::kRemoval, interface_class, device, nullptr,
               next_serial_});
  return Status::SUCCESS;
}

void PnpManager::RemoveAllInterfaces(DeviceObject* device) {
  std::lock_guard lock(mutex_);
  for (auto it = interfaces_.begin(); it != interfaces_.end();) {
    if (it->first != device) {
      ++it;
      continue;
    }
    ObReferenceObject(device);
    QueueLocked({PnpEvent::kRemoval, it->second, device, nullptr, next_serial_});
    it = interfaces_.erase(it);
  }
}

Status IoRegisterPlugPlayNotification(Node* node, const std::string& interface_class,
                                      bool include_existing, PnpCallback callback, void* context,
                                      PnpRegistration** registration) {
  return node->impl().pnp.Register(interface_class, include_existing, callback, context,
                                   registration);
}

void IoUnregisterPlugPlayNotification(PnpRegistration* registration) {
  registration->manager->Unregister(registration);
}

Status IoSetDeviceInterfaceState(DeviceObject* device, const std::string& interface_class,
                                 bool enable) {
  return IoGetDeviceNode(device)->impl().pnp.SetInterfaceState(device, interface_class, enable);
}

}  // namespace softib::kernel
