// The MAD verbs, called from the AL verb handlers (al_handlers.cc).
#pragma once

#include "runtime/al/src/handlers.h"

namespace softib::al {

kernel::Status MadCreatePool(const kernel::CallContext& ctx, const abi::CreateMadPoolIn& in,
                             kernel::CreateMadPoolRefs& refs, abi::CreateMadPoolOut& out);
kernel::Status MadRegSvc(const kernel::CallContext& ctx, const abi::RegMadSvcIn& in,
                         kernel::RegMadSvcRefs& refs, abi::RegMadSvcOut& out);
kernel::Status SendMadVerb(const kernel::CallContext& ctx, const abi::SendMadIn& in,
                           std::span<const uint8_t> mad, kernel::SendMadRefs& refs,
                           abi::SendMadOut& out);
kernel::Status MadCancel(const abi::CancelMadIn& in, kernel::CancelMadRefs& refs);
kernel::Status MadGetEvent(kernel::GetMadEventRefs& refs, abi::GetMadEventOut& out,
                           std::span<uint8_t> mad, kernel::Irp* irp);

}  // namespace softib::al
