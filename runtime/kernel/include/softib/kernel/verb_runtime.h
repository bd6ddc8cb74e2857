// What the generated direct-call API needs from the Access Layer (runtime/al implements it).
#pragma once

#include <cstdint>

#include "softib/kernel/call_context.h"

namespace softib::kernel {

struct VerbHandlerSet;  // generated: kernel/verb_handlers.h

// The handlers serving direct calls made through `al`.
const VerbHandlerSet& DirectHandlers(IbAl* al);

// The context of a direct call made by the kernel client that opened `al`.
CallContext DirectCallContext(IbAl* al);

// The client's implicit Al handle (also declared in softib/al/access_layer.h), which the
// generated object API puts in OpenCa's input.
uint64_t IbGetAlHandle(IbAl* al);

}  // namespace softib::kernel
