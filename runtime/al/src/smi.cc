// The SMI on QP0: directed-route processing (runtime/smp) and the local SMA.
#include "runtime/al/src/mad_format.h"
#include "runtime/al/src/special_qp.h"

namespace softib::al {

bool SpecialQp::SmiReceive(const uint8_t*, const MadOrigin&) { return false; }

bool SpecialQp::SmiPrepareSend(uint8_t*) { return true; }

}  // namespace softib::al
