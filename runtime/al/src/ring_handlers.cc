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

#include "runtime/al/src/ci_call.h"
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

// The CI's ring maps are PASSIVE verbs: sent from the caller's thread (the verb is
// PASSIVE too); the HCA driver may still complete them later, on another thread.
kernel::VerbTask MapCqRingTask(Instance* instance, kernel::ObjectRef cq_ref, abi::MapCqRingOut* out,
                               Irp* irp) {
  constexpr uint64_t kLength = sizeof(abi::MapCqRingOut);
  CqObj* cq = As<CqObj>(cq_ref);
  AlCa* ca = cq->ca_obj->ca.get();
  if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
  const CiRequestor who = RequestorOf(instance);
  CiIrp ci(ca, kernel::BuildCiMapCqRingIrp(ca->lower, who.file, who.mode, {cq->number}, nullptr));
  if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
  if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, kLength};
  const auto* answer = ci.Output<abi::CiMapCqRingOut>();
  out->ring = answer->ring;
  out->shm_id = answer->shm_id;
  co_return {Answer(irp, answer->fd, cq), kLength};
}

Status ServeMapCqRing(const kernel::CallContext& ctx, const abi::MapCqRingIn&,
                      kernel::MapCqRingRefs& refs, abi::MapCqRingOut& out, Irp* irp) {
  return MapCqRingTask(InstanceOf(ctx), std::move(refs.cq), &out, irp).Start(irp);
}

kernel::VerbTask MapQpRingsTask(Instance* instance, kernel::ObjectRef qp_ref,
                                abi::MapQpRingsOut* out, Irp* irp) {
  constexpr uint64_t kLength = sizeof(abi::MapQpRingsOut);
  QpObj* qp = As<QpObj>(qp_ref);
  AlCa* ca = qp->pd_obj->ca_obj->ca.get();
  if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
  const CiRequestor who = RequestorOf(instance);
  CiIrp ci(ca, kernel::BuildCiMapQpRingsIrp(ca->lower, who.file, who.mode, {qp->qpn}, nullptr));
  if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
  if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, kLength};
  const auto* answer = ci.Output<abi::CiMapQpRingsOut>();
  out->send_ring = answer->send_ring;
  out->recv_ring = answer->recv_ring;
  out->shm_id = answer->shm_id;
  co_return {Answer(irp, answer->fd, qp), kLength};
}

Status ServeMapQpRings(const kernel::CallContext& ctx, const abi::MapQpRingsIn&,
                       kernel::MapQpRingsRefs& refs, abi::MapQpRingsOut& out, Irp* irp) {
  return MapQpRingsTask(InstanceOf(ctx), std::move(refs.qp), &out, irp).Start(irp);
}

kernel::VerbTask MapSrqRingTask(Instance* instance, kernel::ObjectRef srq_ref,
                                abi::MapSrqRingOut* out, Irp* irp) {
  constexpr uint64_t kLength = sizeof(abi::MapSrqRingOut);
  SrqObj* srq = As<SrqObj>(srq_ref);
  AlCa* ca = srq->pd_obj->ca_obj->ca.get();
  if (ca->removed.load()) co_return {Status::CA_REMOVED, kLength};
  const CiRequestor who = RequestorOf(instance);
  CiIrp ci(ca, kernel::BuildCiMapSrqRingIrp(ca->lower, who.file, who.mode, {srq->number}, nullptr));
  if (!ci.built()) co_return {Status::INSUFFICIENT_RESOURCES, kLength};
  if (const Status s = co_await ci.Send(); s != Status::SUCCESS) co_return {s, kLength};
  const auto* answer = ci.Output<abi::CiMapSrqRingOut>();
  out->ring = answer->ring;
  out->shm_id = answer->shm_id;
  co_return {Answer(irp, answer->fd, srq), kLength};
}

Status ServeMapSrqRing(const kernel::CallContext& ctx, const abi::MapSrqRingIn&,
                       kernel::MapSrqRingRefs& refs, abi::MapSrqRingOut& out, Irp* irp) {
  return MapSrqRingTask(InstanceOf(ctx), std::move(refs.srq), &out, irp).Start(irp);
}

}  // namespace softib::al
