// The IBAT device (softib/ipoib/ibat_device.h): its creation and deletion with the driver,
// its open/close, and the handlers of the generated dispatch of idl/ibat.idl, which turn the
// ABI structures into ibat.h's calls and back.
#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "internal.h"
#include "kernel/device/ibat_dispatch.h"
#include "softib/ipoib/ibat.h"
#include "softib/ipoib/ibat_device.h"
#include "softib/kernel/io.h"

namespace softib::ipoib {

using kernel::Irp;
using kernel::Status;

namespace {

IpAddr FromAbi(const abi::IbatIpAddress& a) {
  IpAddr ip;
  ip.v6 = a.family == abi::IbatIpFamily::IPV6;
  std::memcpy(ip.bytes.data(), a.bytes, sizeof a.bytes);
  if (!ip.v6) std::fill(ip.bytes.begin() + 4, ip.bytes.end(), uint8_t{0});
  return ip;
}

abi::IbatIpAddress ToAbi(const IpAddr& ip) {
  abi::IbatIpAddress a{};
  a.family = ip.v6 ? abi::IbatIpFamily::IPV6 : abi::IbatIpFamily::IPV4;
  std::memcpy(a.bytes, ip.bytes.data(), ip.v6 ? 16 : 4);
  return a;
}

abi::IbatAddressEntry ToAbi(const IbatLocalAddress& e) {
  abi::IbatAddressEntry out{};
  out.address = ToAbi(e.ip);
  out.ca_guid = e.ca_guid;
  out.port_guid = e.port_guid;
  std::memcpy(out.gid.raw, e.gid.data(), sizeof out.gid.raw);
  out.port = e.port;
  out.pkey = e.pkey;
  return out;
}

class IbatHandlers final : public kernel::IbatVerbHandlers {
 public:
  explicit IbatHandlers(Driver* driver) : driver_(driver) {}

  Status IbatGetIpList(const kernel::CallContext&, const abi::IbatGetIpListIn& in,
                       abi::IbatGetIpListOut& out, Irp*) override {
    const std::vector<IbatLocalAddress> list = ipoib::IbatGetIpList(driver_, in.port_guid);
    const size_t n = std::min<size_t>(list.size(), abi::kIbatMaxAddresses);
    for (size_t i = 0; i < n; ++i) out.entries[i] = ToAbi(list[i]);
    out.count = static_cast<uint32_t>(n);
    out.total = static_cast<uint32_t>(list.size());
    return Status::SUCCESS;
  }

  Status IbatIpToPort(const kernel::CallContext&, const abi::IbatIpToPortIn& in,
                      abi::IbatIpToPortOut& out, Irp*) override {
    IbatLocalAddress entry;
    const Status s = ipoib::IbatIpToPort(driver_, FromAbi(in.address), &entry);
    if (s == Status::SUCCESS) out.entry = ToAbi(entry);
    return s;
  }

  Status IbatResolve(const kernel::CallContext&, const abi::IbatResolveIn& in,
                     abi::IbatResolveOut& out, Irp*) override {
    IbatPath path;
    const Status s = ipoib::IbatResolve(driver_, FromAbi(in.local), FromAbi(in.remote), &path);
    // An IRP never completes with PENDING: the IOCTL says NOT_DONE (idl/ibat.idl).
    if (s == Status::PENDING) return Status::NOT_DONE;
    if (s != Status::SUCCESS) return s;
    std::memcpy(out.sgid.raw, path.sgid.data(), sizeof out.sgid.raw);
    std::memcpy(out.dgid.raw, path.dgid.data(), sizeof out.dgid.raw);
    out.pkey = path.pkey;
    out.remote_qpn = path.remote_qpn;
    std::memcpy(out.remote_mac, path.remote_mac.data(), sizeof out.remote_mac);
    std::memcpy(out.path_record, path.path_record.data(), sizeof out.path_record);
    return Status::SUCCESS;
  }

 private:
  Driver* driver_;
};

// The device's extension holds its handlers (placement-new: they live as long as the device
// object, which IRPs already sent keep referenced; they own nothing).
IbatHandlers* HandlersOf(kernel::DeviceObject* device) {
  return static_cast<IbatHandlers*>(device->DeviceExtension);
}

Status CompleteIbatIrp(Irp* irp, Status status) {
  irp->IoStatus.Status = status;
  irp->IoStatus.Information = 0;
  kernel::IoCompleteRequest(irp);
  return status;
}

}  // namespace

Status CreateIbatDevice(Driver* driver) {
  kernel::DeviceObject* device = nullptr;
  const Status status =
      kernel::IoCreateDevice(driver->object, sizeof(IbatHandlers), kIbatDeviceName, 0, &device);
  if (status != Status::SUCCESS) return status;
  new (device->DeviceExtension) IbatHandlers(driver);
  driver->ibat_device = device;
  return Status::SUCCESS;
}

// Its server (softibd) is stopped first: no request is in flight or comes afterwards.
void DeleteIbatDevice(Driver* driver) {
  if (kernel::DeviceObject* device = std::exchange(driver->ibat_device, nullptr)) {
    kernel::IoDeleteDevice(device);
  }
}

Status DispatchIbatDevice(kernel::DeviceObject* device, Irp* irp) {
  const kernel::IoStackLocation* location = kernel::IoGetCurrentIrpStackLocation(irp);
  switch (location->MajorFunction) {
    case kernel::IrpMajor::kCreate:
    case kernel::IrpMajor::kCleanup:
    case kernel::IrpMajor::kClose:
      return CompleteIbatIrp(irp, Status::SUCCESS);  // no per-open state
    case kernel::IrpMajor::kDeviceControl: {
      if (!kernel::IsIbatIoctl(location->Parameters.DeviceIoControl.IoControlCode)) {
        return CompleteIbatIrp(irp, Status::INVALID_PARAMETER);
      }
      return kernel::DispatchIbatIoctl(*HandlersOf(device), irp);
    }
    default:
      return CompleteIbatIrp(irp, Status::UNSUPPORTED);
  }
}

}  // namespace softib::ipoib
