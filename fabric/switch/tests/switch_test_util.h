// Hand-built SMPs and packets for the switch tests. Every byte position comes from the
// spec's tables (IBA 13.4.3 MAD header, 14.2.1 SMP formats, 7.7 LRH, 9.2 BTH, 9.3.2 DETH),
// not from the IDL the switch's codecs were generated from.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include "softib/fabric/switch.h"

namespace softib::fabric::test {

using Mad = std::array<uint8_t, 256>;

inline constexpr uint8_t kGet = 0x01;
inline constexpr uint8_t kSet = 0x02;
inline constexpr uint8_t kGetResp = 0x81;
// Attribute IDs (IBA 14.2.5).
inline constexpr uint16_t kNodeDescription = 0x0010, kNodeInfo = 0x0011, kSwitchInfo = 0x0012,
                          kGuidInfo = 0x0014, kPortInfo = 0x0015, kPKeyTable = 0x0016,
                          kSlToVl = 0x0017, kVlArb = 0x0018, kLft = 0x0019, kRft = 0x001A,
                          kMft = 0x001B, kSmInfo = 0x0020;

// MAD offsets (IBA 13.4.3, 14.2.1).
inline constexpr std::size_t kStatus = 4;
inline constexpr std::size_t kHopPointer = 6;
inline constexpr std::size_t kHopCount = 7;
inline constexpr std::size_t kData = 64;
inline constexpr std::size_t kInitialPath = 128;
inline constexpr std::size_t kReturnPath = 192;
// Packet offsets: LRH 8 + BTH 12 + DETH 8.
inline constexpr std::size_t kMadInPacket = 28;

// A LID-routed SMP (class 0x01).
Mad LidSmp(uint8_t method, uint16_t attribute, uint32_t modifier, uint64_t mkey = 0);
// A directed-route SMP (class 0x81) with InitialPath[1..n] = path, HopPointer 0.
Mad DrSmp(uint8_t method, uint16_t attribute, uint32_t modifier,
          std::initializer_list<uint8_t> path, uint64_t mkey = 0);

uint16_t Status(const Mad& mad);  // the 16-bit Status field (D included for DR)
void Put16(std::span<uint8_t> at, uint16_t v);
void Put64(std::span<uint8_t> at, uint64_t v);
uint16_t Get16(std::span<const uint8_t> at);
std::span<uint8_t, 64> Data(Mad& mad);

// A whole packet: LRH (VL, DLID, SLID), BTH (UD SEND only, DestQP), DETH (SrcQP), payload,
// ICRC and VCRC.
std::vector<uint8_t> Packet(uint8_t vl, uint16_t dlid, uint16_t slid, uint32_t dest_qp,
                            std::span<const uint8_t> payload, uint32_t src_qp = 0);
// An SMP in a VL15 packet.
std::vector<uint8_t> SmpPacket(const Mad& mad, uint16_t dlid = 0xFFFF, uint16_t slid = 0xFFFF);
Mad MadOf(std::span<const uint8_t> packet);
bool CrcsGood(std::span<const uint8_t> packet);

// Sends `mad` to the switch's SMA and returns the response MAD (HandleSmp).
std::optional<Mad> Ask(Switch& sw, const Mad& mad, uint8_t in_port = 1);

// Cables `port` and takes it Init -> Armed -> Active through the SMA.
void ActivatePort(Switch& sw, uint8_t port);
// LinearFDBTop 63 and LFT block 0 holding `routes` (LID -> port), the rest 0xFF.
void SetLftBlock0(Switch& sw, std::initializer_list<std::pair<uint16_t, uint8_t>> routes);

SwitchConfig TestConfig(uint64_t guid = 0x0002c90300aa0000ULL, uint8_t ports = 8);

}  // namespace softib::fabric::test
