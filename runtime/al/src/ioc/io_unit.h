// The I/O unit of one CA (IBA 16.3): the controllers clients describe (CreateIoc), the slots
// the registered ones occupy, their service entries, and the ChangeID that moves whenever
// what a device management agent reports changes. Answers the DevMgt Gets from it; knows
// nothing of MADs beyond the attribute data and the status.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "softib/kernel/spin_lock.h"

namespace softib::al::ioc {

// DevMgt MAD status values (IBA 13.4.7 common bits, 16.3.1.2 class-specific bits).
inline constexpr uint16_t kStatusUnsupportedMethod = 0x0008;
inline constexpr uint16_t kStatusUnsupportedAttribute = 0x000C;
inline constexpr uint16_t kStatusInvalidField = 0x001C;
inline constexpr uint16_t kStatusNoIoc = 0x0100;
inline constexpr uint16_t kStatusNoServiceEntries = 0x0200;

inline constexpr uint8_t kMaxControllers = 16;  // IOUnitInfo MaxControllers
inline constexpr std::size_t kProfileBytes = 128;
inline constexpr std::size_t kNameBytes = 40;
inline constexpr std::size_t kMaxServices = 255;  // IOControllerProfile ServiceEntries is 8 bits

class IoUnit {
 public:
  // Identifies a controller or a service entry: the object that owns it.
  using Key = const void*;
  using Profile = std::array<uint8_t, kProfileBytes>;
  using Name = std::array<uint8_t, kNameBytes>;

  void AddController(Key ioc, const Profile& profile);
  // Gone with its services; its slot empties.
  void RemoveController(Key ioc);
  // False: the controller has kMaxServices entries already.
  bool AddService(Key ioc, Key service, uint64_t service_id, const Name& name);
  void RemoveService(Key ioc, Key service);
  // The slot (1..kMaxControllers) the controller now occupies; 0: every slot is taken;
  // -1: it occupies one already.
  int Register(Key ioc);

  bool AnyRegistered() const;
  uint16_t change_id() const;

  // A DevMgt Get of `attribute` with `modifier`: the MAD status, and the attribute in
  // `data` (ClassPortInfo 72, IOUnitInfo 132, IOControllerProfile 128, ServiceEntries 192
  // bytes; `data` is at least 192 bytes and zero on entry).
  uint16_t Get(uint16_t attribute, uint32_t modifier, std::span<uint8_t> data) const;

 private:
  struct Service {
    Key key;
    uint64_t id;  // host order
    Name name;
  };
  struct Controller {
    Profile profile{};
    std::vector<Service> services;  // in the order they were added
    uint8_t slot = 0;               // 0: not registered
  };
  void ChangedLocked(const Controller& c);  // ChangeID moves if `c` is visible
  uint16_t ProfileLocked(uint8_t slot, std::span<uint8_t> data) const;
  uint16_t ServicesLocked(uint32_t modifier, std::span<uint8_t> data) const;
  const Controller* AtSlotLocked(uint8_t slot) const;

  mutable kernel::KSpinLock lock_;
  std::map<Key, Controller> controllers_;
  std::array<Key, kMaxControllers> slots_{};
  uint16_t change_id_ = 0;
};

}  // namespace softib::al::ioc
