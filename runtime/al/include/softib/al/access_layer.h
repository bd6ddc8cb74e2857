// The kernel Access Layer of one node (CONTRACT written by the lead; runtime/al implements
// it and may add to it, never change what is here without telling the lead).
//
// The AL is a driver of the emulated kernel. It owns:
//   - the AL device (kAlDeviceName): user processes open it by that simple name; each open
//     file carries an implicit Al object and a handle table;
//   - one filter device attached over each CA's device (named by the HCA driver
//     "hca-<16 hex digits of the node GUID>"): the redirect target of a user's OpenCa, so a
//     CA's users are its open files and its removal reaches exactly them;
//   - the kernel clients' instances (IbAl), opened with IbOpenAl below.
// Every verb arrives either as an IRP (IRP_MJ_DEVICE_CONTROL from user files,
// IRP_MJ_INTERNAL_DEVICE_CONTROL from kernel clients) dispatched by the generated
// DispatchVerbIoctl, or as a generated direct call Ib<Verb>(IbAl*, ...).
#pragma once

#include <chrono>
#include <cstdint>
#include <span>

#include "softib/abi/runtime_ioctls.h"
#include "softib/abi/types.h"
#include "softib/kernel/device.h"
#include "softib/kernel/node.h"
#include "softib/kernel/status.h"

namespace softib::kernel {
class IbAl;
// The public object structures of kernel clients (generated: kernel/verbs_objects.h).
struct IB_QP;
struct IB_SRQ;
struct IB_CQ;
struct IB_MR;
struct IB_MW;
}  // namespace softib::kernel

namespace softib::al {

inline constexpr char kAlDeviceName[] = "ibal";

class AccessLayer;

// Loads the AL driver on `node` (after the HCA driver: CAs arrive as PnP interface
// arrivals) and creates the AL device. PASSIVE.
kernel::Status LoadAccessLayer(kernel::Node* node, AccessLayer** al);
// Unloads it: every file must be closed and every kernel client released first. PASSIVE.
void UnloadAccessLayer(AccessLayer* al);

// ---- added by runtime/al ----
// Waits until the AL has taken CA `guid` (host order) in (its arrival is a PnP
// notification, handled on a worker) or, with `present` false, has let it go. TIMEOUT
// otherwise. PASSIVE.
kernel::Status WaitForCa(AccessLayer* al, uint64_t guid, bool present,
                         std::chrono::milliseconds timeout = std::chrono::seconds(10));
// Live AL objects, pending event requests and open files of the node (QueryObjectCounts
// with scope NODE, for kernel-side leak checks).
abi::ObjectCounts QueryNodeObjectCounts(AccessLayer* al);

}  // namespace softib::al

namespace softib::kernel {

// Opens the AL for the kernel client whose device object is `client`: the AL keeps a
// reference on it and never calls into the client after IbReleaseAl (a client unloading
// with completions in flight is safe). PASSIVE.
Status IbOpenAl(Node* node, DeviceObject* client, IbAl** al);
// Destroys every object the instance still owns (as a file close does) and drops the
// client reference. PASSIVE.
void IbReleaseAl(IbAl* al);

// ---- added by runtime/al ----
// The client's implicit Al handle (what OpenAl would return), which the verbs name.
uint64_t IbGetAlHandle(IbAl* al);
// The IRP path: the AL device and the client's kernel-mode file on it, for the generated
// Build/Send/Call<Verb>Irp (IRP_MJ_INTERNAL_DEVICE_CONTROL). Handles are the same as the
// direct calls'.
DeviceObject* IbGetAlDevice(IbAl* al);
FileObject* IbGetAlFile(IbAl* al);

// The speed path of kernel clients (verbs the IDL gives `paths speed`): straight to the
// HCA, IRQL <= DISPATCH, never blocking. Statuses as the IDL lists them, plus CA_REMOVED.
// UD work requests name their address vector by its Av handle.
Status IbPostSend(IbAl* al, uint64_t qp, std::span<const abi::SendWorkRequest> wrs,
                  uint32_t* num_posted);
Status IbPostRecv(IbAl* al, uint64_t qp, std::span<const abi::RecvWorkRequest> wrs,
                  uint32_t* num_posted);
Status IbPostSrqRecv(IbAl* al, uint64_t srq, std::span<const abi::RecvWorkRequest> wrs,
                     uint32_t* num_posted);
// NOT_FOUND when the CQ is empty (IBAL).
Status IbPollCq(IbAl* al, uint64_t cq, std::span<abi::WorkCompletion> wcs, uint32_t* num_wcs);
Status IbPeekCq(IbAl* al, uint64_t cq, uint32_t* num_entries);
// Arms the CQ: its next notification completes a pending GetCompletionEvent.
Status IbRearmCq(IbAl* al, uint64_t cq, abi::CqNotify notify);
// Binds a type 1 window (queued on the QP's send queue); *rkey: the window's new R_Key.
Status IbBindMw(IbAl* al, uint64_t mw, uint64_t qp, uint64_t mr, const abi::MwBindParams& bind,
                uint32_t* rkey);

// The same over the public objects of the kernel object API (kernel/<module>_ib.h): what a
// client that created its objects with IbCreateQp(IB_PD*, ...) and the like calls. A null
// object answers the verb's invalid-handle status. IbBindMw also updates mw->rkey.
Status IbPostSend(IB_QP* qp, std::span<const abi::SendWorkRequest> wrs, uint32_t* num_posted);
Status IbPostRecv(IB_QP* qp, std::span<const abi::RecvWorkRequest> wrs, uint32_t* num_posted);
Status IbPostSrqRecv(IB_SRQ* srq, std::span<const abi::RecvWorkRequest> wrs, uint32_t* num_posted);
Status IbPollCq(IB_CQ* cq, std::span<abi::WorkCompletion> wcs, uint32_t* num_wcs);
Status IbPeekCq(IB_CQ* cq, uint32_t* num_entries);
Status IbRearmCq(IB_CQ* cq, abi::CqNotify notify);
Status IbBindMw(IB_MW* mw, IB_QP* qp, IB_MR* mr, const abi::MwBindParams& bind, uint32_t* rkey);

}  // namespace softib::kernel
