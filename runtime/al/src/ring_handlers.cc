// The speed path's mappings (MapCqRing, MapQpRings, MapSrqRing): the CA makes the rings'
// shared memory (ci.h), the descriptor travels with the answer (bridge/reply_fds.h), and
// the object counts once in shm_mappings until it is destroyed.
//
// - Only the file that holds the object's handle can map it: the handle is looked up in
//   the calling file's table before this runs (INVALID_*_HANDLE otherwise, stale handles
//   included).
// - Mapping an object again answers with the same memory and geometry (a new descriptor
//   of it) and does not count again: the rings' indices live in that memory, so a second
//   mapping in the process continues where the first one is.
// - Unmapping is the object's destruction (DestroyCq/DestroyQp/DestroySrq, or the file's
//   cleanup when the process closes it or dies): the CA shuts the rings down (SHUTDOWN)
//   and drops its side; the process's mapping is its own to drop.
// - The descriptor can only ride with a user process's request; a kernel caller (which has
//   the CI's PostSend/PollCq instead) gets INSUFFICIENT_RESOURCES.
#include <unistd.h>

#include "runtime/al/src/handlers.h"
#include "softib/bridge/reply_fds.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

namespace {

// Attaches the CA's descriptor to the answer (the bridge duplicates it) and counts the
// mapping. Always closes `fd`.
Status Answer(Irp* irp, int fd, AlObject* object) {
  const bool attached = irp != nullptr && irp->RequestorMode == kernel::ProcessorMode::kUserMode &&
                        bridge::AttachReplyFds(irp, std::span<const int>(&fd, 1));
  close(fd);
  if (!attached) return Status::INSUFFICIENT_RESOURCES;
  object->NoteRingMapping();
  return Status::SUCCESS;
}

}  // namespace

Status ServeMapCqRing(const kernel::CallContext&, const abi::MapCqRingIn&,
                      kernel::MapCqRingRefs& refs, abi::MapCqRingOut& out, Irp* irp) {
  CqObj* cq = As<CqObj>(refs.cq);
  int fd = -1;
  const Status status = cq->ca_obj->ca->ci->MapCqRing(cq->number, &out.ring, &out.shm_id, &fd);
  if (status != Status::SUCCESS) return status;
  return Answer(irp, fd, cq);
}

Status ServeMapQpRings(const kernel::CallContext&, const abi::MapQpRingsIn&,
                       kernel::MapQpRingsRefs& refs, abi::MapQpRingsOut& out, Irp* irp) {
  QpObj* qp = As<QpObj>(refs.qp);
  int fd = -1;
  const Status status = qp->pd_obj->ca_obj->ca->ci->MapQpRings(qp->qpn, &out.send_ring,
                                                               &out.recv_ring, &out.shm_id, &fd);
  if (status != Status::SUCCESS) return status;
  return Answer(irp, fd, qp);
}

Status ServeMapSrqRing(const kernel::CallContext&, const abi::MapSrqRingIn&,
                       kernel::MapSrqRingRefs& refs, abi::MapSrqRingOut& out, Irp* irp) {
  SrqObj* srq = As<SrqObj>(refs.srq);
  int fd = -1;
  const Status status =
      srq->pd_obj->ca_obj->ca->ci->MapSrqRing(srq->number, &out.ring, &out.shm_id, &fd);
  if (status != Status::SUCCESS) return status;
  return Answer(irp, fd, srq);
}

}  // namespace softib::al
