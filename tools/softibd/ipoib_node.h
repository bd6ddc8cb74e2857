// The IPoIB interfaces softibd holds for one node (issue 18): the driver loaded on the node
// (ulp/ipoib ipoib.h LoadDriver) and, per interface, a TAP face (ulp/ipoib/tap) wired to it
// — frames the host sends go to the driver's Transmit, the driver's DeliverToHost and
// SetCarrier reach the TAP — optionally moved into a network namespace with addresses.
// Served on `<node dir>/ipoib.ctl` (control_socket.h; `softib ipoib`):
//   up [name=IF] [ports=1|1,2] [pkey=0x8001] [mode=datagram|connected] [netns=NS]
//      [addr=A/LEN]...                   creates one; the answer names it
//   down NAME                            destroys it (its TAP goes)
//   show [NAME]                          mode, MTU, QPN, GID, MAC, LID, carrier, groups,
//                                        neighbours, counters (the driver's Query)
// With the driver loaded, its IBAT device (softib/ipoib/ibat_device.h) is served to user
// processes as `<node dir>/ibat` (`softib ibat`, softib/user/ibat.h).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "control_socket.h"
#include "device_servers.h"
#include "ipoib_request.h"
#include "softib/ipoib/address_watch.h"
#include "softib/ipoib/ipoib.h"
#include "softib/ipoib/tap_face.h"
#include "softib/kernel/node.h"

namespace softib::softibd {

class IpoibNode {
 public:
  IpoibNode() = default;
  ~IpoibNode() { Stop(); }
  IpoibNode(const IpoibNode&) = delete;
  IpoibNode& operator=(const IpoibNode&) = delete;

  // Loads the driver on `node` and serves `<dir>/ipoib.ctl` and, with the driver, its IBAT
  // device as `<dir>/ibat`. A driver that does not load is reported in `driver_error` (the
  // socket still answers, refusing `up` with it); false only when a socket cannot be served.
  bool Start(kernel::Node* node, const std::string& label, const std::string& dir,
             std::string* error);
  // Every interface down (no TAP left), the sockets closed (the IBAT device's open files
  // too), the driver unloaded. PASSIVE.
  void Stop();
  // The request's whole answer ("ok\n..." or "error: ...\n"), as the socket sends it.
  std::string Execute(const std::vector<std::string>& args);
  // Creates an interface: "" and its name in `name`, or the error.
  std::string Up(const IpoibUp& up, std::string* name);
  const std::string& driver_error() const { return driver_error_; }

  static constexpr const char* kControlName = "ipoib.ctl";

 private:
  struct Held {
    std::unique_ptr<ipoib::TapFace> tap;
    ipoib::Interface* interface = nullptr;
    std::unique_ptr<ipoib::AddressWatch> addresses;  // the host's → SetAddresses
    IpoibUp config;
  };
  std::string Down(const std::string& name);
  std::string Show(const std::string& name);
  static void Destroy(Held& held);

  std::string label_;
  ipoib::Driver* driver_ = nullptr;
  std::string driver_error_;
  std::mutex mutex_;  // the control socket's thread and Stop
  std::map<std::string, Held> held_;
  ControlSocket control_;
  DeviceServers ibat_;  // <dir>/ibat while the driver is loaded
};

}  // namespace softib::softibd
