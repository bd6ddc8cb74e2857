// ATS (the SA's address translation records, as WinOFED's IPoIB registers them): one
// ServiceRecord per address the host assigned to the interface (SetAddresses) — service ID
// 0x10000CE100415453, name "DAPL Address Translation Service", the interface's GID and
// P_Key, no lease end, the address in ServiceData8 (IPv4 at byte 12) — registered through
// the AL's RegisterService once the carrier is up, deregistered when the address goes.
#include <endian.h>

#include <cstring>
#include <memory>

#include "internal.h"
#include "kernel/verbs_al_direct.h"
#include "softib/mad/mad_sa.h"

namespace softib::ipoib {

using kernel::Status;

namespace {

constexpr uint64_t kAtsServiceId = 0x10000CE100415453ull;
constexpr char kAtsName[] = "DAPL Address Translation Service";

std::vector<uint8_t> KeyOf(const IpAddr& address) {
  std::vector<uint8_t> key(17);
  key[0] = address.v6 ? 1 : 0;
  std::memcpy(key.data() + 1, address.bytes.data(), 16);
  return key;
}

void Deregister(Interface* i, uint64_t reg) {
  if (reg == 0 || reg == kAtsPending || Stopping(i)) return;
  SendVerb(i, kernel::BuildDeregisterServiceIrp(i->pdo, i->file, {{reg}}), nullptr, 0,
           [](Status, uint64_t) {});
}

struct Registration {
  Interface* interface;
  std::vector<uint8_t> key;
  abi::RegisterServiceOut out{};
};

// Asks the SA for the record of `key` (its entry is kAtsPending).
void Register(Interface* i, const std::vector<uint8_t>& key) {
  auto r = std::make_shared<Registration>();
  r->interface = i;
  r->key = key;
  abi::RegisterServiceIn in{};
  mad::ServiceRecord record{};
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    in.port_guid = i->port_guid_be;
    record.ServiceGID = i->local.hw.gid;
    record.ServiceP_Key = i->local.pkey;
  }
  record.ServiceID = kAtsServiceId;
  record.ServiceLease = 0xFFFFFFFF;
  std::memcpy(record.ServiceName.data(), kAtsName, sizeof kAtsName - 1);
  uint8_t data[16] = {};
  if (key[0] != 0) {
    std::memcpy(data, key.data() + 1, 16);
  } else {
    std::memcpy(data + 12, key.data() + 1, 4);
  }
  uint8_t* d8[16] = {&record.ServiceData8_1,  &record.ServiceData8_2,  &record.ServiceData8_3,
                     &record.ServiceData8_4,  &record.ServiceData8_5,  &record.ServiceData8_6,
                     &record.ServiceData8_7,  &record.ServiceData8_8,  &record.ServiceData8_9,
                     &record.ServiceData8_10, &record.ServiceData8_11, &record.ServiceData8_12,
                     &record.ServiceData8_13, &record.ServiceData8_14, &record.ServiceData8_15,
                     &record.ServiceData8_16};
  for (int n = 0; n < 16; ++n) *d8[n] = data[n];
  in.al.value = i->al_handle;
  // ServiceID 0, ServiceGID 1, ServiceP_Key 2, ServiceLease 4, ServiceName 6,
  // ServiceData8.1-16 7-22.
  in.component_mask = (1ull << 0) | (1ull << 1) | (1ull << 2) | (1ull << 4) | (1ull << 6);
  for (int bit = 7; bit <= 22; ++bit) in.component_mask |= 1ull << bit;
  in.context = reinterpret_cast<uint64_t>(i);
  in.timeout_ms = 1000;
  in.retry_count = 3;
  const auto bytes = record.Pack();
  std::memcpy(in.record, bytes.data(), bytes.size());
  SendVerb(i, kernel::BuildRegisterServiceIrp(i->pdo, i->file, in, &r->out), &r->out, sizeof r->out,
           [r](Status status, uint64_t) {
             Interface* i = r->interface;
             uint64_t unwanted = 0;
             {
               kernel::SpinLockGuard guard(i->lock);
               auto it = i->ats.find(r->key);
               if (status != Status::SUCCESS) {
                 if (it != i->ats.end() && it->second == kAtsPending) it->second = 0;
               } else if (it == i->ats.end() || it->second != kAtsPending) {
                 unwanted = r->out.reg.value;  // the address went meanwhile
               } else {
                 it->second = r->out.reg.value;
               }
             }
             Deregister(i, unwanted);
           });
}

}  // namespace

void ReRegisterAts(Interface* i) {
  std::vector<std::vector<uint8_t>> keys;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping || !i->carrier) return;
    for (auto& [key, reg] : i->ats) {
      if (reg == 0) {
        reg = kAtsPending;
        keys.push_back(key);
      }
    }
  }
  for (const auto& key : keys) Register(i, key);
}

void SetAddresses(Interface* i, std::span<const IpAddr> addresses) {
  if (i->lbfo != nullptr) return LbfoSetAddresses(i, addresses);
  std::vector<uint64_t> gone;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    i->addresses.assign(addresses.begin(), addresses.end());
    std::map<std::vector<uint8_t>, uint64_t> wanted;
    for (const IpAddr& address : addresses) wanted.emplace(KeyOf(address), 0);
    for (auto& [key, reg] : i->ats) {
      auto it = wanted.find(key);
      if (it == wanted.end()) {
        gone.push_back(reg);
      } else {
        it->second = reg;
      }
    }
    i->ats = std::move(wanted);
  }
  for (uint64_t reg : gone) Deregister(i, reg);
  ReRegisterAts(i);
}

size_t RegisteredAtsRecords(Interface* i) {
  if (i->lbfo != nullptr) return LbfoAtsRecords(i);
  kernel::SpinLockGuard guard(i->lock);
  size_t count = 0;
  for (const auto& [key, reg] : i->ats) count += reg != 0 && reg != kAtsPending ? 1 : 0;
  return count;
}

}  // namespace softib::ipoib
