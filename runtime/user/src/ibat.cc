#include "softib/user/ibat.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include "user/ibat_proxy.h"

namespace softib::user {

Status OpenIbat(const std::string& run_dir, DeviceHandle* device) {
  return OpenDevice((run_dir + "/ibat").c_str(), device);
}

Status IbatGetIpList(DeviceHandle device, uint64_t port_guid,
                     std::vector<abi::IbatAddressEntry>* entries, uint32_t* total) {
  abi::IbatGetIpListIn in{};
  in.port_guid = port_guid;
  abi::IbatGetIpListOut out{};
  const Status status = proxy::IbatGetIpList(device, in, out);
  entries->clear();
  if (status != Status::SUCCESS) return status;
  const uint32_t n = std::min(out.count, abi::kIbatMaxAddresses);
  entries->assign(out.entries, out.entries + n);
  if (total != nullptr) *total = out.total;
  return status;
}

Status IbatIpToPort(DeviceHandle device, const abi::IbatIpAddress& address,
                    abi::IbatAddressEntry* entry) {
  abi::IbatIpToPortIn in{};
  in.address = address;
  abi::IbatIpToPortOut out{};
  const Status status = proxy::IbatIpToPort(device, in, out);
  if (status == Status::SUCCESS) *entry = out.entry;
  return status;
}

Status IbatResolve(DeviceHandle device, const abi::IbatIpAddress& local,
                   const abi::IbatIpAddress& remote, abi::IbatResolveOut* path) {
  abi::IbatResolveIn in{};
  in.local = local;
  in.remote = remote;
  abi::IbatResolveOut out{};
  const Status status = proxy::IbatResolve(device, in, out);
  if (status == Status::NOT_DONE) return Status::PENDING;  // idl/ibat.idl: "ask again"
  if (status == Status::SUCCESS) *path = out;
  return status;
}

bool ParseIbatIp(const std::string& text, abi::IbatIpAddress* address) {
  abi::IbatIpAddress a{};
  if (text.find(':') == std::string::npos) {
    a.family = abi::IbatIpFamily::IPV4;
    if (inet_pton(AF_INET, text.c_str(), a.bytes) != 1) return false;
  } else {
    a.family = abi::IbatIpFamily::IPV6;
    if (inet_pton(AF_INET6, text.c_str(), a.bytes) != 1) return false;
  }
  *address = a;
  return true;
}

std::string IbatIpText(const abi::IbatIpAddress& address) {
  char text[INET6_ADDRSTRLEN] = {};
  const int family = address.family == abi::IbatIpFamily::IPV6 ? AF_INET6 : AF_INET;
  if (inet_ntop(family, address.bytes, text, sizeof text) == nullptr) return "?";
  return text;
}

}  // namespace softib::user
