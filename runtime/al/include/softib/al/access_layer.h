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

#include "softib/kernel/device.h"
#include "softib/kernel/node.h"
#include "softib/kernel/status.h"

namespace softib::kernel {
class IbAl;
}

namespace softib::al {

inline constexpr char kAlDeviceName[] = "ibal";

class AccessLayer;

// Loads the AL driver on `node` (after the HCA driver: CAs arrive as PnP interface
// arrivals) and creates the AL device. PASSIVE.
kernel::Status LoadAccessLayer(kernel::Node* node, AccessLayer** al);
// Unloads it: every file must be closed and every kernel client released first. PASSIVE.
void UnloadAccessLayer(AccessLayer* al);

}  // namespace softib::al

namespace softib::kernel {

// Opens the AL for the kernel client whose device object is `client`: the AL keeps a
// reference on it and never calls into the client after IbReleaseAl (a client unloading
// with completions in flight is safe). PASSIVE.
Status IbOpenAl(Node* node, DeviceObject* client, IbAl** al);
// Destroys every object the instance still owns (as a file close does) and drops the
// client reference. PASSIVE.
void IbReleaseAl(IbAl* al);

}  // namespace softib::kernel
