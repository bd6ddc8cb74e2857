// SMInfo (IBA 14.2.5.13) and the election between subnet managers (IBA 14.4): who is
// MASTER, how a STANDBY follows the master, and the handover. Pure functions, no I/O; the
// SubnetManager sends and answers the SMPs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "softib/mad/mad_sm.h"
#include "softib/sm/mad_port.h"

namespace softib::sm {

enum class SmState : uint8_t { kNotActive = 0, kDiscovering = 1, kStandby = 2, kMaster = 3 };
const char* ToString(SmState state);

// SMInfo Set attribute modifiers (IBA 14.2.5.13, table 152).
inline constexpr uint32_t kSmInfoHandover = 1;
inline constexpr uint32_t kSmInfoAcknowledge = 2;
inline constexpr uint32_t kSmInfoDisable = 3;
inline constexpr uint32_t kSmInfoStandby = 4;
inline constexpr uint32_t kSmInfoDiscover = 5;

// PortInfo CapabilityMask bit 1: an SM is present on the port.
inline constexpr uint32_t kCapIsSm = 1u << 1;

struct SmIdentity {
  uint64_t guid = 0;
  uint8_t priority = 0;
  SmState state = SmState::kNotActive;
  uint32_t act_count = 0;
};

// IBA 14.4.1.1: the higher priority wins; on equal priority the lower GUID.
bool Outranks(const SmIdentity& a, const SmIdentity& b);

struct Election {
  SmState role = SmState::kMaster;
  std::optional<std::size_t> master;     // index into the others: the SM we follow
  std::optional<std::size_t> hand_over;  // as MASTER: a better SM to hand the subnet to
};

// What an SM that has just discovered the subnet (or is MASTER and sweeping) does about
// the other SMs it found. A MASTER already there is followed (we go STANDBY); as MASTER
// (`self.state`) only a better MASTER is (two took the subnet: the worse steps down).
// Without one, the best of the discovering/standby SMs and ourselves becomes MASTER. As
// MASTER, a better SM that has settled as STANDBY gets the subnet handed over.
Election Elect(const SmIdentity& self, const std::vector<SmIdentity>& others);

// SMInfo data: pack and read (the first 21 bytes of SMPData).
void PackSmInfo(const SmIdentity& info, uint64_t sm_key, MadBytes& mad);
SmIdentity ReadSmInfo(const MadBytes& mad, uint64_t* sm_key = nullptr);

}  // namespace softib::sm
