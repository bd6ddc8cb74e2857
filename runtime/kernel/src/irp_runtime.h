// Private to runtime/kernel: what the I/O manager keeps with each IRP (Irp::Runtime).
#pragma once

#include <atomic>
#include <cstdint>

#include "softib/kernel/event.h"
#include "softib/kernel/irp.h"

namespace softib::kernel {

class Node;

struct IrpRuntime {
  enum class State : uint8_t { kActive, kCompleting, kDone };
  std::atomic<Node*> node{nullptr};  // set by the first IoCallDriver; read by cancellers
  State state = State::kActive;
  bool owned_by_io_manager = false;  // built by IoBuildDeviceIoControlRequest
  bool pooled = false;               // one lookaside block with the IRP (io_manager.cc)
  void* system_buffer = nullptr;     // allocated here (freed with the IRP)
  uint32_t output_length = 0;        // bytes UserBuffer can take
  KEvent* done = nullptr;            // IoCallDriverAndWait: set after final completion
  IoStatusBlock* status_out = nullptr;
};

inline IrpRuntime* RuntimeOf(Irp* irp) { return static_cast<IrpRuntime*>(irp->Runtime); }

}  // namespace softib::kernel
