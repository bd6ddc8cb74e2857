// IBAT for user processes: the IPoIB driver's address translation (which local port an IP
// address is on; how to reach a remote IP address over InfiniBand: its GID, P_Key, QPN, MAC
// and path record), over the generated proxies of idl/ibat.idl and the node's IBAT device,
// which softibd serves as <run-dir>/ibat where the IPoIB driver is loaded. The statuses are
// those of the kernel's ulp/ipoib/include/softib/ipoib/ibat.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "softib/abi/ibat.h"
#include "softib/user/device_io.h"

namespace softib::user {

// Opens `<run_dir>/ibat`: NOT_FOUND when no IBAT device is served there (no softibd, or no
// IPoIB driver on that node). Close it with CloseDevice.
Status OpenIbat(const std::string& run_dir, DeviceHandle* device);

// The addresses of the interfaces on port `port_guid` (host order; 0: every interface), at
// most abi::kIbatMaxAddresses of them; `total` (when not null) says how many there are.
Status IbatGetIpList(DeviceHandle device, uint64_t port_guid,
                     std::vector<abi::IbatAddressEntry>* entries, uint32_t* total = nullptr);

// The interface holding `address`: SUCCESS with its entry, or NOT_FOUND.
Status IbatIpToPort(DeviceHandle device, const abi::IbatIpAddress& address,
                    abi::IbatAddressEntry* entry);

// How to reach `remote` through the interface holding `local` (the unspecified address of
// either family: any). SUCCESS fills `path`; PENDING: resolution is under way, ask again;
// NOT_FOUND, TIMEOUT, INVALID_PARAMETER as ibat.h says. Sends one request (never waits).
Status IbatResolve(DeviceHandle device, const abi::IbatIpAddress& local,
                   const abi::IbatIpAddress& remote, abi::IbatResolveOut* path);

// An IPv4 (dotted) or IPv6 address as text to the ABI form; false when it is neither.
bool ParseIbatIp(const std::string& text, abi::IbatIpAddress* address);
// The address as text (inet_ntop).
std::string IbatIpText(const abi::IbatIpAddress& address);

}  // namespace softib::user
