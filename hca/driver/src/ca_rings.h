// The CA's side of the speed-path rings of its ring-mapped objects (ca_rings.cc): the
// shared memory it created for each, and its private consumer/producer state over it. All
// of it is the CA's lock's; the memory itself is shared (a RingWatch of the service keeps
// it mapped while the service sleeps on it).
#pragma once

#include <cstdint>
#include <memory>

#include "softib/abi/runtime_ioctls.h"
#include "softib/rings/ring.h"
#include "softib/rings/shared_memory.h"

namespace softib::hca {

// One mapped object's memory (a sealed memfd and the CA's mapping of it).
struct RingRegion {
  uint32_t id = 0;
  rings::SharedMemory memory;
};

// A QP's send ring and, unless it receives from an SRQ, its receive ring.
struct RingQp {
  std::shared_ptr<RingRegion> region;
  abi::RingMapping send_mapping{};
  abi::RingMapping recv_mapping{};  // num_entries 0: the QP receives from an SRQ
  rings::RingConsumer<abi::SendWorkRequest> send;
  rings::RingConsumer<abi::RecvWorkRequest> recv;
  // Entries wait that the QP cannot take now (state, or its queue is full): served again
  // after every call into the CA instead of being watched by the service.
  bool send_stalled = false;
  bool recv_stalled = false;
  bool failed = false;  // a ring error was reported (QP to error, QP_FATAL) once
};

struct RingSrq {
  std::shared_ptr<RingRegion> region;
  abi::RingMapping mapping{};
  rings::RingConsumer<abi::RecvWorkRequest> ring;
  bool stalled = false;
  bool failed = false;
};

struct RingCq {
  std::shared_ptr<RingRegion> region;
  abi::RingMapping mapping{};
  rings::CqProducer producer;
  // The device CQ (kept armed SOLICITED) saw a solicited or error completion since the last
  // move into the ring: a SOLICITED arm of the ring may fire.
  bool solicited = false;
  // Overflowed or failed: completions for it are dropped from now on.
  bool dead = false;
};

}  // namespace softib::hca
