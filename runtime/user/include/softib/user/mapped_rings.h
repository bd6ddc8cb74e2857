// The speed path's rings in this process: a Map* request returns a ring's geometry and,
// with the answer (SCM_RIGHTS), the shared memory object the HCA created; mapping it and
// attaching the user-mode verbs provider (hca/uvp) gives PostSend/PostRecv/PollCq that
// never cross the channel.
#pragma once

#include "softib/abi/abi_objects.h"
#include "softib/rings/shared_memory.h"
#include "softib/user/device_io.h"
#include "softib/uvp/uvp.h"

namespace softib::user {

// A CQ's ring. Unmapped at destruction (destroy the CQ afterwards or before: either way
// the HCA keeps its own mapping until the CQ is gone).
class MappedCq {
 public:
  // MapCqRing on the file that created `cq`. ERROR when the answer carried no memory
  // object or it does not hold the ring it describes.
  Status Map(DeviceHandle device, abi::Handle<abi::ObjectType::Cq> cq);
  uvp::CompletionQueue& queue() { return queue_; }

 private:
  rings::SharedMemory memory_;
  uvp::CompletionQueue queue_;
};

// A QP's send and receive rings.
class MappedQp {
 public:
  Status Map(DeviceHandle device, abi::Handle<abi::ObjectType::Qp> qp);
  uvp::QueuePair& queue() { return queue_; }

 private:
  rings::SharedMemory memory_;
  uvp::QueuePair queue_;
};

// An SRQ's ring.
class MappedSrq {
 public:
  Status Map(DeviceHandle device, abi::Handle<abi::ObjectType::Srq> srq);
  uvp::SharedReceiveQueue& queue() { return queue_; }

 private:
  rings::SharedMemory memory_;
  uvp::SharedReceiveQueue queue_;
};

}  // namespace softib::user
