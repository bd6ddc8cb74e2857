#include "runtime/al/src/ioc/io_unit.h"

#include <algorithm>
#include <cstring>

#include "softib/mad/mad_common.h"
#include "softib/mad/mad_devmgt.h"

namespace softib::al::ioc {

namespace {

constexpr uint16_t kClassPortInfo = 0x0001;
// IOControllerProfile byte 54: the number of service entries (the AL counts them).
constexpr std::size_t kProfileServiceEntries = 54;
constexpr std::size_t kEntriesPerGet = 4;

}  // namespace

void IoUnit::AddController(Key ioc, const Profile& profile) {
  kernel::SpinLockGuard guard(lock_);
  controllers_[ioc].profile = profile;
}

void IoUnit::RemoveController(Key ioc) {
  kernel::SpinLockGuard guard(lock_);
  auto it = controllers_.find(ioc);
  if (it == controllers_.end()) return;
  ChangedLocked(it->second);
  if (it->second.slot != 0) slots_[it->second.slot - 1] = nullptr;
  controllers_.erase(it);
}

bool IoUnit::AddService(Key ioc, Key service, uint64_t service_id, const Name& name) {
  kernel::SpinLockGuard guard(lock_);
  auto it = controllers_.find(ioc);
  if (it == controllers_.end() || it->second.services.size() >= kMaxServices) return false;
  it->second.services.push_back(Service{service, service_id, name});
  ChangedLocked(it->second);
  return true;
}

void IoUnit::RemoveService(Key ioc, Key service) {
  kernel::SpinLockGuard guard(lock_);
  auto it = controllers_.find(ioc);
  if (it == controllers_.end()) return;
  auto& services = it->second.services;
  const auto gone = std::remove_if(services.begin(), services.end(),
                                   [&](const Service& s) { return s.key == service; });
  if (gone == services.end()) return;
  services.erase(gone, services.end());
  ChangedLocked(it->second);
}

int IoUnit::Register(Key ioc) {
  kernel::SpinLockGuard guard(lock_);
  auto it = controllers_.find(ioc);
  if (it == controllers_.end()) return 0;
  if (it->second.slot != 0) return -1;
  for (uint8_t i = 0; i < kMaxControllers; ++i) {
    if (slots_[i] != nullptr) continue;
    slots_[i] = ioc;
    it->second.slot = static_cast<uint8_t>(i + 1);
    ChangedLocked(it->second);
    return i + 1;
  }
  return 0;
}

bool IoUnit::AnyRegistered() const {
  kernel::SpinLockGuard guard(lock_);
  return std::any_of(slots_.begin(), slots_.end(), [](Key k) { return k != nullptr; });
}

uint16_t IoUnit::change_id() const {
  kernel::SpinLockGuard guard(lock_);
  return change_id_;
}

void IoUnit::ChangedLocked(const Controller& c) {
  if (c.slot != 0) ++change_id_;
}

const IoUnit::Controller* IoUnit::AtSlotLocked(uint8_t slot) const {
  if (slot < 1 || slot > kMaxControllers || slots_[slot - 1] == nullptr) return nullptr;
  return &controllers_.at(slots_[slot - 1]);
}

uint16_t IoUnit::Get(uint16_t attribute, uint32_t modifier, std::span<uint8_t> data) const {
  kernel::SpinLockGuard guard(lock_);
  switch (attribute) {
    case kClassPortInfo: {
      if (modifier != 0) return kStatusInvalidField;
      softib::mad::ClassPortInfo info;
      info.BaseVersion = 1;
      info.ClassVersion = 1;
      info.RespTimeValue = 18;  // 4.096 us * 2^18, about 1 s: as HCAs report
      (void)info.Pack(data);
      return 0;
    }
    case softib::mad::IOUnitInfo::kAttributeId: {
      if (modifier != 0) return kStatusInvalidField;
      softib::mad::IOUnitInfo info;
      info.ChangeID = change_id_;
      info.MaxControllers = kMaxControllers;
      // One nibble per slot: 1 present, 0 empty, 0xF beyond MaxControllers (no such slot).
      for (std::size_t i = 0; i < info.ControllerList.size(); ++i) {
        info.ControllerList[i] = i < kMaxControllers ? (slots_[i] != nullptr ? 1 : 0) : 0xF;
      }
      (void)info.Pack(data);
      return 0;
    }
    case softib::mad::IOControllerProfile::kAttributeId:
      if (modifier > 0xFF) return kStatusInvalidField;
      return ProfileLocked(static_cast<uint8_t>(modifier), data);
    case softib::mad::ServiceEntries::kAttributeId:
      return ServicesLocked(modifier, data);
    default:
      return kStatusUnsupportedAttribute;
  }
}

uint16_t IoUnit::ProfileLocked(uint8_t slot, std::span<uint8_t> data) const {
  if (slot < 1 || slot > kMaxControllers) return kStatusInvalidField;
  const Controller* c = AtSlotLocked(slot);
  if (c == nullptr) return kStatusNoIoc;
  std::memcpy(data.data(), c->profile.data(), kProfileBytes);
  data[kProfileServiceEntries] = static_cast<uint8_t>(c->services.size());
  return 0;
}

// Modifier: bits 31:16 the slot, 15:8 the last entry, 7:0 the first (at most four).
uint16_t IoUnit::ServicesLocked(uint32_t modifier, std::span<uint8_t> data) const {
  const uint32_t slot = modifier >> 16;
  const uint32_t last = (modifier >> 8) & 0xFF;
  const uint32_t first = modifier & 0xFF;
  if (slot < 1 || slot > kMaxControllers || last < first || last - first >= kEntriesPerGet) {
    return kStatusInvalidField;
  }
  const Controller* c = AtSlotLocked(static_cast<uint8_t>(slot));
  if (c == nullptr) return kStatusNoIoc;
  if (last >= c->services.size()) return kStatusNoServiceEntries;
  softib::mad::ServiceEntries entries;
  for (uint32_t i = first; i <= last; ++i) {
    entries.ServiceName[i - first] = c->services[i].name;
    entries.ServiceID[i - first] = c->services[i].id;
  }
  (void)entries.Pack(data);
  return 0;
}

}  // namespace softib::al::ioc
