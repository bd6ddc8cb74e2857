// The SA and multicast-join verbs, called from the AL verb handlers (al_handlers.cc).
#pragma once

#include "runtime/al/src/handlers.h"

namespace softib::al {

// sa_request.cc
kernel::Status SaSendRequest(const kernel::CallContext& ctx, const abi::SendSaRequestIn& in,
                             std::span<const uint8_t> attribute, kernel::SendSaRequestRefs& refs,
                             abi::SendSaRequestOut& out);
kernel::Status SaGetResponse(kernel::GetSaResponseRefs& refs, abi::GetSaResponseOut& out,
                             std::span<uint8_t> data, kernel::Irp* irp);
kernel::Status SaPathCacheControl(const kernel::CallContext& ctx, const abi::PathCacheControlIn& in,
                                  abi::PathCacheControlOut& out);
// service_reg.cc
kernel::Status SaRegisterService(const kernel::CallContext& ctx, const abi::RegisterServiceIn& in,
                                 kernel::RegisterServiceRefs& refs, abi::RegisterServiceOut& out,
                                 kernel::Irp* irp);
kernel::Status SaDeregisterService(const kernel::CallContext& ctx,
                                   const abi::DeregisterServiceIn& in,
                                   kernel::DeregisterServiceRefs& refs, kernel::Irp* irp);
// mcast_join.cc
kernel::Status SaJoinMcast(const kernel::CallContext& ctx, const abi::JoinMcastIn& in,
                           kernel::JoinMcastRefs& refs, abi::JoinMcastOut& out, kernel::Irp* irp);
kernel::Status SaLeaveMcast(const kernel::CallContext& ctx, const abi::LeaveMcastIn& in,
                            kernel::LeaveMcastRefs& refs, kernel::Irp* irp);
// inform.cc
kernel::Status SaSubscribeReport(const kernel::CallContext& ctx, const abi::SubscribeReportIn& in,
                                 kernel::SubscribeReportRefs& refs, abi::SubscribeReportOut& out,
                                 kernel::Irp* irp);
kernel::Status SaGetReport(kernel::GetReportRefs& refs, abi::GetReportOut& out, kernel::Irp* irp);
kernel::Status SaUnsubscribeReport(const kernel::CallContext& ctx,
                                   const abi::UnsubscribeReportIn& in);

}  // namespace softib::al
