// The AL's port attribute cache (al_internal.h): filled by the CI's query IRPs, read by the
// AL's own consumers under the CA's lock.
#include <cstring>

#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/ci_call.h"

namespace softib::al {

using kernel::Status;

namespace {

constexpr kernel::ProcessorMode kKernel = kernel::ProcessorMode::kKernelMode;

// The coroutine of AlCa::RefreshAttributes. The CA outlives it: its arrival holds it
// until the refresh is done, and an event's refresh runs before the event IRP comes home
// (what the CA's removal waits for).
kernel::IrpTask RefreshTask(AlCa* ca, uint8_t only, std::function<void()> done) {
  const uint32_t n = ca->ci->num_ports();  // identity, as the CA's GUID
  std::vector<uint8_t> buffer(sizeof(abi::CiQueryCaOut) + n * sizeof(abi::PortAttributes));
  Status s = co_await CiIrp(ca->lower,
                            kernel::BuildCiQueryCaIrp(ca->lower, nullptr, kKernel, buffer.data(),
                                                      static_cast<uint32_t>(buffer.size())),
                            buffer.data(), buffer.size());
  abi::CiQueryCaOut head{};
  std::vector<abi::PortAttributes> ports;
  if (s == Status::SUCCESS) {
    std::memcpy(&head, buffer.data(), sizeof(head));
    ports.resize(std::min(head.num_ports, n));
    std::memcpy(ports.data(), buffer.data() + sizeof(head), ports.size() * sizeof(ports[0]));
  }
  std::vector<AlCa::CachedPort> tables(ports.size());
  for (uint32_t i = 0; i < ports.size(); ++i) {
    const auto port = static_cast<uint8_t>(i + 1);
    tables[i].attributes = ports[i];
    if (only != 0 && port != only) continue;
    std::vector<uint8_t> pkeys(sizeof(abi::CiQueryPkeyTableOut) +
                               ports[i].num_pkeys * sizeof(uint16_t));
    abi::CiQueryPkeyTableIn pkey_in{};
    pkey_in.port = port;
    if (co_await CiIrp(
            ca->lower,
            kernel::BuildCiQueryPkeyTableIrp(ca->lower, nullptr, kKernel, pkey_in, pkeys.data(),
                                             static_cast<uint32_t>(pkeys.size())),
            pkeys.data(), pkeys.size()) == Status::SUCCESS) {
      abi::CiQueryPkeyTableOut out{};
      std::memcpy(&out, pkeys.data(), sizeof(out));
      tables[i].pkeys.resize(std::min<uint32_t>(out.num_pkeys, ports[i].num_pkeys));
      std::memcpy(tables[i].pkeys.data(), pkeys.data() + sizeof(out),
                  tables[i].pkeys.size() * sizeof(uint16_t));
    }
    std::vector<uint8_t> gids(sizeof(abi::CiQueryGidTableOut) +
                              ports[i].num_gids * sizeof(abi::Gid));
    abi::CiQueryGidTableIn gid_in{};
    gid_in.port = port;
    if (co_await CiIrp(
            ca->lower,
            kernel::BuildCiQueryGidTableIrp(ca->lower, nullptr, kKernel, gid_in, gids.data(),
                                            static_cast<uint32_t>(gids.size())),
            gids.data(), gids.size()) == Status::SUCCESS) {
      abi::CiQueryGidTableOut out{};
      std::memcpy(&out, gids.data(), sizeof(out));
      tables[i].gids.resize(std::min<uint32_t>(out.num_gids, ports[i].num_gids));
      std::memcpy(tables[i].gids.data(), gids.data() + sizeof(out),
                  tables[i].gids.size() * sizeof(abi::Gid));
    }
  }
  if (s == Status::SUCCESS) {
    kernel::SpinLockGuard guard(ca->lock);
    ca->cached_ca = head.attributes;
    if (ca->cached_ports.size() != tables.size()) ca->cached_ports.resize(tables.size());
    for (uint32_t i = 0; i < tables.size(); ++i) {
      AlCa::CachedPort& cached = ca->cached_ports[i];
      cached.attributes = tables[i].attributes;
      if (only == 0 || i + 1 == only) {
        cached.pkeys = std::move(tables[i].pkeys);
        cached.gids = std::move(tables[i].gids);
      }
    }
  }
  done();
}

}  // namespace

void AlCa::RefreshAttributes(uint8_t port, std::function<void()> done) {
  RefreshTask(this, port, std::move(done));
}

bool AlCa::CachedPortAttributes(uint8_t port, abi::PortAttributes* out) {
  if (removed.load()) return false;
  kernel::SpinLockGuard guard(lock);
  if (port == 0 || port > cached_ports.size()) return false;
  *out = cached_ports[port - 1].attributes;
  return true;
}

bool AlCa::CachedAllPorts(std::vector<abi::PortAttributes>* out) {
  if (removed.load()) return false;
  kernel::SpinLockGuard guard(lock);
  if (cached_ports.empty()) return false;
  out->clear();
  for (const CachedPort& p : cached_ports) out->push_back(p.attributes);
  return true;
}

bool AlCa::CachedPkeyTable(uint8_t port, std::vector<uint16_t>* out) {
  if (removed.load()) return false;
  kernel::SpinLockGuard guard(lock);
  if (port == 0 || port > cached_ports.size()) return false;
  *out = cached_ports[port - 1].pkeys;
  return true;
}

}  // namespace softib::al
