#include "softib/user/mapped_rings.h"

#include <unistd.h>

#include <string>

#include "softib/abi/runtime_ioctls.h"

namespace softib::user {
namespace {

// One Map* request: its output and the one memory object that must come with it.
template <typename In, typename Out>
Status MapRequest(DeviceHandle device, uint32_t code, const In& in, Out* out,
                  rings::SharedMemory* memory) {
  int fds[2] = {-1, -1};
  uint32_t fd_count = 0;
  uint32_t returned = 0;
  const Status status = DeviceIoControlWithFds(device, code, &in, sizeof in, out, sizeof *out,
                                               &returned, fds, 2, &fd_count);
  if (status != Status::SUCCESS) {
    for (uint32_t i = 0; i < fd_count; ++i) close(fds[i]);
    return status;
  }
  if (fd_count != 1 || returned != sizeof *out) {
    for (uint32_t i = 0; i < fd_count; ++i) close(fds[i]);
    return Status::ERROR;
  }
  std::string error;
  return rings::SharedMemory::Map(fds[0], memory, &error) ? Status::SUCCESS : Status::ERROR;
}

}  // namespace

Status MappedCq::Map(DeviceHandle device, abi::Handle<abi::ObjectType::Cq> cq) {
  abi::MapCqRingIn in{};
  in.cq = cq;
  abi::MapCqRingOut out{};
  Status status = MapRequest(device, abi::kIoctlMapCqRing, in, &out, &memory_);
  if (status != Status::SUCCESS) return status;
  status = queue_.Attach(memory_.base(), memory_.size(), out.ring);
  return status == Status::SUCCESS ? status : Status::ERROR;
}

Status MappedQp::Map(DeviceHandle device, abi::Handle<abi::ObjectType::Qp> qp) {
  abi::MapQpRingsIn in{};
  in.qp = qp;
  abi::MapQpRingsOut out{};
  Status status = MapRequest(device, abi::kIoctlMapQpRings, in, &out, &memory_);
  if (status != Status::SUCCESS) return status;
  status = queue_.Attach(memory_.base(), memory_.size(), out.send_ring, out.recv_ring);
  return status == Status::SUCCESS ? status : Status::ERROR;
}

Status MappedSrq::Map(DeviceHandle device, abi::Handle<abi::ObjectType::Srq> srq) {
  abi::MapSrqRingIn in{};
  in.srq = srq;
  abi::MapSrqRingOut out{};
  Status status = MapRequest(device, abi::kIoctlMapSrqRing, in, &out, &memory_);
  if (status != Status::SUCCESS) return status;
  status = queue_.Attach(memory_.base(), memory_.size(), out.ring);
  return status == Status::SUCCESS ? status : Status::ERROR;
}

}  // namespace softib::user
