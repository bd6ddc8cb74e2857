// The AL's device management agent (IBA 16.3): on QP1 of every port of every CA it answers
// DevMgt Gets of ClassPortInfo, IOUnitInfo, IOControllerProfile and ServiceEntries from the
// CA's I/O unit (io_unit.h), as the IOU's firmware agent would on an HCA with I/O
// controllers; Sets are refused (the attributes are read-only).
#pragma once

#include <memory>

namespace softib::al {

class AccessLayer;
class GsiRegistration;

// PASSIVE; the agents live until the registration goes.
std::unique_ptr<GsiRegistration> StartDevMgtAgent(AccessLayer* al);

}  // namespace softib::al
