// The IPoIB driver's IBAT device (idl/ibat.idl, `target device`): a device object named
// kIbatDeviceName in the node's namespace, created when the driver loads and deleted when it
// unloads. Its IRP_MJ_DEVICE_CONTROL goes to the generated dispatch
// (generated/kernel/device/ibat_dispatch.h), whose handlers call ibat.h. softibd serves it to
// user processes as <run-dir>/ibat; kernel clients open it by name (IoCreateFile) and send
// the IRPs of generated/kernel/device/ibat_irp.h. Added by helper "ibatface" (issue 18).
#pragma once

namespace softib::ipoib {

inline constexpr const char* kIbatDeviceName = "ibat";

}  // namespace softib::ipoib
