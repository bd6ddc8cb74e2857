// Upward news from the device. The device never calls into the layers above it: its owner
// (the HCA driver) hands it these callbacks and decides how the news travels on (IRP
// completions, PnP events). Callbacks run on the caller's thread, synchronously, and must
// not call back into the device.
#pragma once

#include <cstdint>
#include <functional>

#include "softib/abi/types.h"

namespace softib::hca {

// An affiliated or unaffiliated asynchronous event; `object` is the CQ number, QP number,
// SRQ number or port number the event concerns.
struct DeviceEvent {
  abi::AsyncEventType type{};
  uint32_t object = 0;
};

using AsyncEventSink = std::function<void(const DeviceEvent&)>;
// A CQ armed with RequestNotify got a completion that satisfies the arming.
using CompletionEventSink = std::function<void(uint32_t cq_number)>;

}  // namespace softib::hca
