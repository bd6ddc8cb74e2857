// What softib_perf's CM messages carry in their private data (network order), instead of
// the out-of-band exchange: the client's plan and buffer in the REQ (92 bytes, IBA
// 12.6.5), the server's buffer in the REP, the reason in a REJ. Versioned: a server
// rejects a REQ of another layout (CONSUMER_REJECT, with the reason).
//
// REQ:  0 'S' 'P' version kind=1 | 4 test transport atomic_type flags(bit 0: validate)
//       8 iterations(32) | 12 tx_depth(16) rx_depth(16) | 16 inline_size(16) num_sizes(8) 0
//      20 first_size(32): size i is first_size << i (one size, or -a's powers of two)
//      24 rkey(32) 28 0(32) | 32 vaddr(64) | 40 buffer_bytes(64) | 48..91 zero
// REP:  0 'S' 'P' version kind=2 | 4 status(32, 0) | 8 rkey(32) 12 0(32) | 16 vaddr(64)
//      24 buffer_bytes(64)
// REJ:  the reason as text, NUL-padded (up to CEP_REJ_PDATA_MAX bytes)
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "oob.h"

namespace softib::perf {

inline constexpr uint8_t kCmLayoutVersion = 1;
inline constexpr size_t kReqPrivateDataBytes = 92;
inline constexpr size_t kRepPrivateDataBytes = 32;
inline constexpr size_t kRejPrivateDataBytes = 148;

// False and `error` when the plan's sizes are not one size or a doubling run.
bool EncodeReqPrivateData(const TestPlan& plan, const PeerInfo& mine,
                          std::array<uint8_t, kReqPrivateDataBytes>* out, std::string* error);
// False and `error` (the reason the server gives in its REJ) for another layout.
bool DecodeReqPrivateData(std::span<const uint8_t> data, TestPlan* plan, PeerInfo* peer,
                          std::string* error);

std::array<uint8_t, kRepPrivateDataBytes> EncodeRepPrivateData(const PeerInfo& mine);
bool DecodeRepPrivateData(std::span<const uint8_t> data, PeerInfo* peer, std::string* error);

std::array<uint8_t, kRejPrivateDataBytes> EncodeRejReason(const std::string& reason);
std::string DecodeRejReason(std::span<const uint8_t> data);

}  // namespace softib::perf
