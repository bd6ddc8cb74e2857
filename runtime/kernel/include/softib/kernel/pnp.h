// The PnP manager (device-interface notifications). A driver enables an interface class on
// one of its devices; clients registered for that class get an arrival, and a removal when
// the interface is disabled or the device deleted. Notifications run at PASSIVE on the
// node's workers, one at a time and in the order the events happened.
#pragma once

#include <string>

#include "softib/kernel/status.h"

namespace softib::kernel {

class Node;
struct DeviceObject;
struct DriverObject;
struct PnpRegistration;

enum class PnpEvent : uint8_t { kArrival, kRemoval };

struct PnpNotification {
  PnpEvent event;
  const std::string& interface_class;
  DeviceObject* device;  // referenced for the duration of the callback
};

using PnpCallback = void (*)(const PnpNotification& notification, void* context);

// Registers `callback` for `interface_class` on `node`. With `include_existing`, the
// interfaces already enabled arrive first (before any later event).
Status IoRegisterPlugPlayNotification(Node* node, const std::string& interface_class,
                                      bool include_existing, PnpCallback callback, void* context,
                                      PnpRegistration** registration);

// After this returns the callback is never called again: a callback in flight on another
// thread is waited for (so PASSIVE only); from inside its own callback, it returns at once.
void IoUnregisterPlugPlayNotification(PnpRegistration* registration);

// Enables or disables `interface_class` on `device`, raising arrival or removal.
// Enabling twice or disabling what is not enabled answers INVALID_STATE.
Status IoSetDeviceInterfaceState(DeviceObject* device, const std::string& interface_class,
                                 bool enable);

}  // namespace softib::kernel
