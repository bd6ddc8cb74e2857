// The CI verbs as IRPs (idl/ci.idl): the handlers the generated dispatch
// (kernel/hca/ci_dispatch.h) calls once a request passed its checks, over the CA's own CI
// methods; when they complete (inline, or later from the completion DPC); and pend mode.
//
// Where SoftCa would otherwise have to wait, the IRP pends: a CQ's destruction and a QP's
// move to Error complete from the CA's completion DPC, which runs after every DPC already
// queued on the node (DPCs run in FIFO order on one thread): the packet deliveries and
// ticks that could still complete work into that CQ, or news of that QP's flush, have
// reached the CA by then, so the caller's completion routine never races them.
#include <algorithm>

#include "hca/driver/src/soft_ca.h"
#include "softib/kernel/verb_support.h"

namespace softib::hca {

using kernel::Status;

namespace {

// Whose memory a registration names: a user requestor's process (through its file, which
// the generated dispatch has checked: a user process's open), or the kernel's.
MemoryOwner OwnerOf(const kernel::CallContext& ctx) {
  if (ctx.requestor_mode != kernel::ProcessorMode::kUserMode || ctx.file == nullptr) return {};
  return {ctx.file->ProcessId, ctx.file->DmaAddressOffset};
}

}  // namespace

// ---- completion ----------------------------------------------------------------------------

Status SoftCa::Complete(kernel::Irp* irp, Status status, uint64_t information) {
  if (config_.pend_ci) return CompleteLater(irp, status, information);
  return kernel::CompleteVerbIrp(irp, status, information);
}

Status SoftCa::CompleteLater(kernel::Irp* irp, Status status, uint64_t information) {
  irp->IoStatus.Status = status;
  irp->IoStatus.Information = information;
  kernel::IoMarkIrpPending(irp);
  Reference();  // the DPC's, per IRP
  const kernel::Irql previous = later_lock_.Acquire();
  later_.push_back(irp);
  later_lock_.Release(previous);
  kernel::KeInsertQueueDpc(&completion_dpc_, nullptr, nullptr);  // false: already queued
  return Status::PENDING;
}

void SoftCa::CompletionDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* ca = static_cast<SoftCa*>(context);
  std::vector<kernel::Irp*> irps;
  ca->later_lock_.AcquireAtDpcLevel();
  irps.swap(ca->later_);
  ca->later_lock_.ReleaseFromDpcLevel();
  for (kernel::Irp* irp : irps) kernel::IoCompleteRequest(irp);
  // The references last: the final one may free the CA (nothing of it is touched after).
  for (std::size_t i = 0; i < irps.size(); ++i) ca->Dereference();
}

// ---- CA and ports --------------------------------------------------------------------------

Status SoftCa::CiQueryCa(const kernel::CallContext&, abi::CiQueryCaOut& out,
                         std::span<abi::PortAttributes> ports, kernel::Irp*) {
  const auto n = std::min<std::size_t>(ports.size(), config_.num_ports);
  const Status status = QueryCa(&out.attributes, ports.first(n));
  if (status == Status::SUCCESS) out.num_ports = static_cast<uint32_t>(n);
  return status;
}

Status SoftCa::CiQueryGidTable(const kernel::CallContext&, const abi::CiQueryGidTableIn& in,
                               abi::CiQueryGidTableOut& out, std::span<abi::Gid> gids,
                               kernel::Irp*) {
  return QueryGidTable(in.port, in.start, gids, &out.num_gids);
}

Status SoftCa::CiQueryPkeyTable(const kernel::CallContext&, const abi::CiQueryPkeyTableIn& in,
                                abi::CiQueryPkeyTableOut& out, std::span<uint16_t> pkeys,
                                kernel::Irp*) {
  return QueryPkeyTable(in.port, in.start, pkeys, &out.num_pkeys);
}

Status SoftCa::CiModifyCa(const kernel::CallContext&, const abi::CiModifyCaIn& in, kernel::Irp*) {
  return ModifyCa(in.port, in.flags, in.cap_set, in.cap_clear, in.init_type, in.system_image_guid);
}

Status SoftCa::CiLocalMad(const kernel::CallContext&, const abi::CiLocalMadIn& in,
                          abi::CiLocalMadOut& out, kernel::Irp*) {
  return LocalMad(in.port, std::span<const uint8_t, 256>(in.request),
                  std::span<uint8_t, 256>(out.response));
}

// ---- PD, AH, MR ------------------------------------------------------------------------------

Status SoftCa::CiAllocPd(const kernel::CallContext&, abi::CiAllocPdOut& out, kernel::Irp*) {
  return AllocPd(&out.pd);
}

Status SoftCa::CiFreePd(const kernel::CallContext&, const abi::CiFreePdIn& in, kernel::Irp*) {
  return FreePd(in.pd);
}

Status SoftCa::CiCreateAh(const kernel::CallContext&, const abi::CiCreateAhIn& in,
                          abi::CiCreateAhOut& out, kernel::Irp*) {
  return CreateAh(in.pd, in.av, &out.ah);
}

Status SoftCa::CiDestroyAh(const kernel::CallContext&, const abi::CiDestroyAhIn& in, kernel::Irp*) {
  return DestroyAh(in.ah);
}

Status SoftCa::CiBindAhHandle(const kernel::CallContext&, const abi::CiBindAhHandleIn& in,
                              kernel::Irp*) {
  return BindAhHandle(in.ah, in.handle);
}

Status SoftCa::CiRegisterMr(const kernel::CallContext& ctx, const abi::CiRegisterMrIn& in,
                            abi::CiRegisterMrOut& out, kernel::Irp*) {
  return RegisterMr(in.pd, in.vaddr, in.length, in.access, OwnerOf(ctx), &out.key);
}

Status SoftCa::CiRegisterPhysMr(const kernel::CallContext& ctx, const abi::CiRegisterPhysMrIn& in,
                                std::span<const abi::PhysRange> ranges,
                                abi::CiRegisterPhysMrOut& out, kernel::Irp*) {
  // Kernel buffers only: a user process has no physical memory to name.
  if (ctx.requestor_mode != kernel::ProcessorMode::kKernelMode) {
    return Status::INVALID_PERMISSION;
  }
  return RegisterPhysMr(in.pd, in.iova, ranges, in.access, &out.key);
}

Status SoftCa::CiDeregisterMr(const kernel::CallContext&, const abi::CiDeregisterMrIn& in,
                              kernel::Irp*) {
  return DeregisterMr(in.key);
}

Status SoftCa::CiReregisterMr(const kernel::CallContext& ctx, const abi::CiReregisterMrIn& in,
                              abi::CiReregisterMrOut& out, kernel::Irp*) {
  return ReregisterMr(in.key, in.what, in.pd, in.vaddr, in.length, in.access, OwnerOf(ctx),
                      &out.new_key);
}

// ---- CQ ----------------------------------------------------------------------------------------

Status SoftCa::CiCreateCq(const kernel::CallContext&, const abi::CiCreateCqIn& in,
                          abi::CiCreateCqOut& out, kernel::Irp*) {
  return CreateCq(in.size, &out.cq, &out.actual_size);
}

Status SoftCa::CiResizeCq(const kernel::CallContext&, const abi::CiResizeCqIn& in,
                          abi::CiResizeCqOut& out, kernel::Irp*) {
  out.size = in.size;
  return ResizeCq(in.cq, &out.size);
}

Status SoftCa::CiQueryCq(const kernel::CallContext&, const abi::CiQueryCqIn& in,
                         abi::CiQueryCqOut& out, kernel::Irp*) {
  return QueryCq(in.cq, &out.size);
}

Status SoftCa::CiDestroyCq(const kernel::CallContext&, const abi::CiDestroyCqIn& in,
                           kernel::Irp* irp) {
  const Status status = DestroyCq(in.cq);
  if (status != Status::SUCCESS) return status;
  return CompleteLater(irp, status, 0);  // after the DPCs that could still fill the CQ
}

// ---- QP ----------------------------------------------------------------------------------------

Status SoftCa::CiCreateQp(const kernel::CallContext&, const abi::CiCreateQpIn& in,
                          abi::CiCreateQpOut& out, kernel::Irp*) {
  return CreateQp(in.pd, in.params, in.send_cq, in.recv_cq, in.srq, &out.qpn, &out.caps);
}

Status SoftCa::CiCreateSpecialQp(const kernel::CallContext&, const abi::CiCreateSpecialQpIn& in,
                                 abi::CiCreateSpecialQpOut& out, kernel::Irp*) {
  return CreateSpecialQp(in.pd, in.port, in.params, in.send_cq, in.recv_cq, &out.qp, &out.qp_num,
                         &out.caps);
}

Status SoftCa::CiModifyQp(const kernel::CallContext&, const abi::CiModifyQpIn& in,
                          kernel::Irp* irp) {
  const Status status = ModifyQp(in.qpn, in.attributes);
  const bool to_error = abi::HasAny(in.attributes.mask, abi::QpAttrMask::STATE) &&
                        in.attributes.state == abi::QpState::ERROR;
  if (status != Status::SUCCESS || !to_error) return status;
  return CompleteLater(irp, status, 0);  // after the flush's news
}

Status SoftCa::CiQueryQp(const kernel::CallContext&, const abi::CiQueryQpIn& in,
                         abi::CiQueryQpOut& out, kernel::Irp*) {
  return QueryQp(in.qpn, &out.attributes);
}

Status SoftCa::CiDestroyQp(const kernel::CallContext&, const abi::CiDestroyQpIn& in, kernel::Irp*) {
  return DestroyQp(in.qpn);
}

// ---- SRQ, MW, multicast ------------------------------------------------------------------------

Status SoftCa::CiCreateSrq(const kernel::CallContext&, const abi::CiCreateSrqIn& in,
                           abi::CiCreateSrqOut& out, kernel::Irp*) {
  return CreateSrq(in.pd, in.attributes, &out.srq, &out.granted);
}

Status SoftCa::CiModifySrq(const kernel::CallContext&, const abi::CiModifySrqIn& in, kernel::Irp*) {
  return ModifySrq(in.srq, in.mask, in.attributes);
}

Status SoftCa::CiQuerySrq(const kernel::CallContext&, const abi::CiQuerySrqIn& in,
                          abi::CiQuerySrqOut& out, kernel::Irp*) {
  return QuerySrq(in.srq, &out.attributes);
}

Status SoftCa::CiDestroySrq(const kernel::CallContext&, const abi::CiDestroySrqIn& in,
                            kernel::Irp*) {
  return DestroySrq(in.srq);
}

Status SoftCa::CiAllocMw(const kernel::CallContext&, const abi::CiAllocMwIn& in,
                         abi::CiAllocMwOut& out, kernel::Irp*) {
  return AllocMw(in.pd, in.type, &out.mw, &out.rkey);
}

Status SoftCa::CiQueryMw(const kernel::CallContext&, const abi::CiQueryMwIn& in,
                         abi::CiQueryMwOut& out, kernel::Irp*) {
  return QueryMw(in.mw, &out.type, &out.rkey);
}

Status SoftCa::CiDestroyMw(const kernel::CallContext&, const abi::CiDestroyMwIn& in, kernel::Irp*) {
  return DestroyMw(in.mw);
}

Status SoftCa::CiAttachMcast(const kernel::CallContext&, const abi::CiAttachMcastIn& in,
                             kernel::Irp*) {
  return AttachMcast(in.qpn, in.mgid, in.mlid);
}

Status SoftCa::CiDetachMcast(const kernel::CallContext&, const abi::CiDetachMcastIn& in,
                             kernel::Irp*) {
  return DetachMcast(in.qpn, in.mgid, in.mlid);
}

// ---- ring maps (PASSIVE) -----------------------------------------------------------------------
// `fd` belongs to the IRP's sender from completion on; -1 unless SUCCESS.

Status SoftCa::CiMapCqRing(const kernel::CallContext&, const abi::CiMapCqRingIn& in,
                           abi::CiMapCqRingOut& out, kernel::Irp*) {
  int fd = -1;
  const Status status = MapCqRing(in.cq, &out.ring, &out.shm_id, &fd);
  out.fd = status == Status::SUCCESS ? fd : -1;
  return status;
}

Status SoftCa::CiMapQpRings(const kernel::CallContext&, const abi::CiMapQpRingsIn& in,
                            abi::CiMapQpRingsOut& out, kernel::Irp*) {
  int fd = -1;
  const Status status = MapQpRings(in.qpn, &out.send_ring, &out.recv_ring, &out.shm_id, &fd);
  out.fd = status == Status::SUCCESS ? fd : -1;
  return status;
}

Status SoftCa::CiMapSrqRing(const kernel::CallContext&, const abi::CiMapSrqRingIn& in,
                            abi::CiMapSrqRingOut& out, kernel::Irp*) {
  int fd = -1;
  const Status status = MapSrqRing(in.srq, &out.ring, &out.shm_id, &fd);
  out.fd = status == Status::SUCCESS ? fd : -1;
  return status;
}

}  // namespace softib::hca
