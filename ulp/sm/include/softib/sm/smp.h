// Building and reading the SMPs the SM sends: directed-route Get/Set of one attribute
// (IBA 14.2.1.2: DrSLID = DrDLID = permissive, HopPointer 0, D = 0, InitialPath[1..n] =
// the egress port at each hop, entry 0 unused), and the few attribute ids and method
// values involved.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "softib/sm/mad_port.h"

namespace softib::sm {

inline constexpr uint8_t kClassSubnLid = 0x01;
inline constexpr uint8_t kClassSubnDr = 0x81;

inline constexpr uint8_t kMethodGet = 0x01;
inline constexpr uint8_t kMethodSet = 0x02;
inline constexpr uint8_t kMethodGetResp = 0x81;
inline constexpr uint8_t kMethodTrap = 0x05;
inline constexpr uint8_t kMethodTrapRepress = 0x07;

inline constexpr uint16_t kAttrNotice = 0x0002;
inline constexpr uint16_t kAttrNodeDescription = 0x0010;
inline constexpr uint16_t kAttrNodeInfo = 0x0011;
inline constexpr uint16_t kAttrSwitchInfo = 0x0012;
inline constexpr uint16_t kAttrPortInfo = 0x0015;
inline constexpr uint16_t kAttrPKeyTable = 0x0016;
inline constexpr uint16_t kAttrLft = 0x0019;
inline constexpr uint16_t kAttrMft = 0x001B;
inline constexpr uint16_t kAttrSmInfo = 0x0020;

inline constexpr std::size_t kSmpDataOffset = 64;
inline constexpr std::size_t kSmpDataBytes = 64;
inline constexpr std::size_t kLftBlockEntries = 64;
inline constexpr uint8_t kMaxDrHops = 63;

// A directed-route SMP along `path` (InitialPath[1..n]; empty = the local node). The
// attribute data, when given, is copied into SMPData (at most 64 bytes).
MadBytes MakeDrSmp(uint8_t method, uint16_t attribute, uint32_t modifier,
                   std::span<const uint8_t> path, std::span<const uint8_t> data = {});

// Turns a directed-route SMP into the LID-routed one of the same request (class 0x01,
// HopPointer/HopCount, DrSLID/DrDLID and both paths reserved: zero); the MadAddress's LID
// then routes it.
void ToLidRouted(MadBytes& smp);

// Fields of a received SMP (either routing).
uint8_t SmpMethod(const MadBytes& mad);      // the method byte, R bit included
uint16_t SmpStatus(const MadBytes& mad);     // the 15-bit status (D bit removed for DR)
uint16_t SmpAttribute(const MadBytes& mad);  //
uint32_t SmpModifier(const MadBytes& mad);
uint8_t SmpClass(const MadBytes& mad);
std::span<const uint8_t, kSmpDataBytes> SmpData(const MadBytes& mad);
std::span<uint8_t, kSmpDataBytes> MutableSmpData(MadBytes& mad);

// "[1,3,5]" for messages.
std::string PathString(std::span<const uint8_t> path);

}  // namespace softib::sm
