// The AL's SA client: one GSI agent of class SubnAdm on QP1 of every port (gsi_agent.h)
// sends requests to the port's SM (LID and SL from the port's attributes, QP1, P_Key index
// 0) and takes the SA's Reports; the PathRecord cache; and the lists of what must be done
// again when the SM may have forgotten it (service registrations, multicast joins and
// subscriptions after an SM change, a LID change, a client reregister or the port coming
// back). Verbs: sa_request.cc, service_reg.cc, mcast_join.cc, inform.cc.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "runtime/al/src/al_internal.h"
#include "runtime/al/src/sa/path_cache.h"
#include "runtime/al/src/sa/sa_mad.h"

namespace softib::al {

class GsiRegistration;
struct MadOrigin;

namespace sa {

// A local port the SA is reached through.
struct SaPort {
  std::shared_ptr<AlCa> ca;
  uint8_t port = 0;
  uint64_t port_guid = 0;  // host order
  abi::PortAttributes attributes{};
};

// Names a request in flight (Cancel).
struct SaTicket {
  uint64_t ca_guid = 0;
  uint8_t port = 0;
  uint64_t id = 0;
  explicit operator bool() const { return id != 0; }
};

// How a request ended: SUCCESS with the SA's answer, TIMEOUT (no answer after the retries,
// or the send failed), CANCELED.
using SaDone = std::function<void(kernel::Status status, const SaAnswer& answer)>;

// Something the SA must be told again after the SM may have lost it (a registration, a
// join, a subscription). Held by the client while listed.
class SaRedo {
 public:
  virtual ~SaRedo() = default;
  virtual void Redo() = 0;  // DISPATCH or below, no SA client lock held
  virtual void Hold() = 0;
  virtual void Release() = 0;
  virtual bool OnPort(uint64_t ca_guid, uint8_t port) const = 0;
  // A Report (its Notice) the SA sent to the port (subscriptions take theirs).
  virtual void OnReport(std::span<const uint8_t> /*notice*/) {}
};

class SaClient {
 public:
  explicit SaClient(AccessLayer* al);
  ~SaClient();
  SaClient(const SaClient&) = delete;
  SaClient& operator=(const SaClient&) = delete;

  void Start();  // PASSIVE, at the AL's start
  void Stop();   // PASSIVE, at its end

  // The port of `port_guid` (network order): INVALID_GUID when no CA has it,
  // INVALID_PORT_STATE when it is not ACTIVE or knows no SM.
  kernel::Status FindPort(uint64_t port_guid_be, SaPort* out);

  // Sends `request` to the port's SA; `done` is called once, at DISPATCH or below, unless
  // Send fails. timeout_ms 0: 1000 ms.
  kernel::Status Send(const SaPort& port, const SaRequest& request, uint32_t timeout_ms,
                      uint32_t retries, SaDone done, SaTicket* ticket = nullptr);
  void Cancel(const SaTicket& ticket);  // `done` gets CANCELED unless it already ran

  PathCache& path_cache() { return path_cache_; }

  // A port event of a CA (AlCa::Dispatch): the cache of the port is dropped; after an SM
  // change, LID change, reregister request or the port's return, the redo list runs.
  void OnPortEvent(AlCa& ca, uint8_t port, abi::AsyncEventType type);
  void AddRedo(SaRedo* redo);  // holds it
  void RemoveRedo(SaRedo* redo);
  // The listed entries of a port, held (the caller releases them).
  std::vector<SaRedo*> HeldOnPort(uint64_t ca_guid, uint8_t port);
  std::atomic<uint64_t> redone{0};  // redo runs (tests)

  std::atomic<uint64_t> reports{0};  // Reports received (and answered)

 private:
  // A Report: answered with ReportResponse, its Notice given to the listed entries of the port.
  void OnReceive(std::span<const uint8_t> mad, const MadOrigin& origin, uint64_t ca_guid,
                 uint8_t port);

  AccessLayer* const al_;
  std::unique_ptr<GsiRegistration> agents_;
  PathCache path_cache_;
  std::atomic<uint32_t> next_tid_{1};
  kernel::KSpinLock lock_;
  std::set<SaRedo*> redo_;
};

// The AL's SA client (al_driver.cc creates it with the AL).
SaClient* SaOf(AccessLayer* al);

}  // namespace sa
}  // namespace softib::al
