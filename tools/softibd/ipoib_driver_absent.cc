// Built only while the tree has no IPoIB driver (ulp/ipoib/driver, target
// softib_ipoib_driver): ipoib.h's entry points refusing, so that softibd's IPoIB control
// (ipoib_node.cc) builds and answers "the IPoIB driver did not load" until the driver lands.
// Goes away with it (tools/softibd/CMakeLists.txt picks one or the other).
#include "softib/ipoib/ipoib.h"

namespace softib::ipoib {

kernel::Status LoadDriver(kernel::Node*, Driver** driver) {
  *driver = nullptr;
  return kernel::Status::UNSUPPORTED;
}
void UnloadDriver(Driver*) {}
kernel::Status CreateInterface(Driver*, const InterfaceConfig&, EthernetFace*,
                               Interface** interface) {
  *interface = nullptr;
  return kernel::Status::UNSUPPORTED;
}
void DestroyInterface(Interface*) {}
void Transmit(Interface*, std::span<const uint8_t>) {}
Mac InterfaceMac(Interface*) { return {}; }
uint32_t InterfaceMtu(Interface*) { return 0; }
kernel::Status Query(Interface*, InterfaceInfo*) { return kernel::Status::UNSUPPORTED; }

}  // namespace softib::ipoib
