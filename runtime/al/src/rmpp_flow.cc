// RMPP transfers on a special QP: the state machines of rmpp.h driven by sends, receives
// and the QP's timer.
#include "runtime/al/src/mad_service.h"
#include "runtime/al/src/rmpp.h"

namespace softib::al {

using kernel::Status;

Status SpecialQp::StartRmppLocked(const std::shared_ptr<MadSend>&, After&) {
  return Status::UNSUPPORTED;
}
void SpecialQp::PumpRmppLocked(const std::shared_ptr<MadSend>&, After&) {}
bool SpecialQp::OnRmppReceive(const uint8_t*, const MadOrigin&, MadSvcObj*, After&) {
  return false;
}
void SpecialQp::RmppTimeoutLocked(const std::shared_ptr<MadSend>&, After&) {}

}  // namespace softib::al
