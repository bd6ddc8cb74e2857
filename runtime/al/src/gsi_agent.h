// Agents the AL runs itself on QP1 (the CM, the SA client): one management class and
// version on every port of every CA, from a registration on. A registration's agents exist
// from a port's CA arrival (once its special QPs started) to its removal; they sit beside
// clients' MAD services on the same QP (the usual rule: one unsolicited taker per class,
// version and method).
//
// News go to callbacks, called at DISPATCH or below with no AL lock held (they may send).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "runtime/al/src/special_qp.h"

namespace softib::al {

class GsiAgent;
class GsiRegistration;
using GsiAgentRef = HeldAgent<GsiAgent>;

struct GsiAgentSpec {
  uint8_t mgmt_class = 0;
  uint8_t mgmt_version = 0;
  bool rmpp = false;             // responses may come as RMPP transfers (SA GetTable)
  std::vector<uint8_t> methods;  // the unsolicited methods it takes (none: requester only)
  // An unsolicited MAD (one MAD; more when an RMPP request was reassembled). The origin's
  // wc.slid, wc.src_qp, wc.pkey_index, wc.sl and grh/sgid say where to answer.
  std::function<void(GsiAgent& agent, std::span<const uint8_t> mad, const MadOrigin& origin)>
      on_receive;
};

struct GsiSendOptions {
  bool response_expected = false;
  uint32_t timeout_ms = 0;  // per try, after the send's wire completion (> 0 with a response)
  uint32_t retries = 0;     // sent again (same TID) this many times before RESP_TIMEOUT_ERR
};

// How a send ended: SUCCESS with the response (empty when none was expected; a
// reassembled RMPP response may exceed 256 bytes), or RESP_TIMEOUT_ERR, CANCELED (Cancel,
// the CA's removal, the registration's end) or a wire error, with no response.
using GsiSendDone = std::function<void(abi::WcStatus status, std::span<const uint8_t> response,
                                       const MadOrigin& origin)>;

class GsiAgent final : public MadAgent {
 public:
  AlCa* ca() const { return sqp_->ca(); }
  uint8_t port() const { return sqp_->port(); }
  uint32_t agent_id() const { return MadAgent::agent_id; }

  // Sends one 256-byte MAD to `to` (its Q_Key host order; QP1's is 0x80010000). A request
  // gets this agent's id in the high half of its TID. `done` (may be empty) is called once.
  // `*id` (may be null) names the send for Cancel.
  kernel::Status Send(const MadAddress& to, std::span<const uint8_t> mad,
                      const GsiSendOptions& options, GsiSendDone done, uint64_t* id = nullptr);
  // NOT_FOUND once the send is over.
  kernel::Status Cancel(uint64_t id);

  void Post(const abi::MadEventRecord& record, std::vector<uint8_t> mad) override;
  void Hold() override { references_.fetch_add(1, std::memory_order_relaxed); }
  void Release() override;

 private:
  friend class GsiRegistration;
  GsiAgent(GsiRegistration* registration, SpecialQp* sqp, const abi::MadSvcParams& params);
  ~GsiAgent() override;
  void Close();  // PASSIVE: off the QP, its sends CANCELED

  struct Pending {
    GsiSendDone done;
    uint64_t send_id = 0;  // the special QP's, once Send returned
    std::vector<uint8_t> response;
    MadOrigin origin;
  };
  GsiRegistration* const registration_;  // outlives its agents' callbacks (Close waits)
  SpecialQp* const sqp_;
  std::atomic<uint32_t> references_{1};
  kernel::KSpinLock lock_;
  bool closed_ = false;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Pending> pending_;  // by our id (the send's context)
};

// The agents of one spec on every port. PASSIVE to create and end.
class GsiRegistration {
 public:
  // Agents on every port of every CA present and arriving, until the registration goes
  // (its destructor waits for callbacks in flight). Takes AccessLayer::pnp_mutex: not from
  // inside a CA's arrival or removal.
  static std::unique_ptr<GsiRegistration> Register(AccessLayer* al, GsiAgentSpec spec);
  ~GsiRegistration();  // Deregister
  GsiRegistration(const GsiRegistration&) = delete;
  GsiRegistration& operator=(const GsiRegistration&) = delete;

  // The agent of (CA, port), held (null: none — the CA is gone or its QP1 did not start).
  // Any IRQL up to DISPATCH.
  GsiAgentRef Find(uint64_t ca_guid, uint8_t port);
  const GsiAgentSpec& spec() const { return spec_; }

  // The AL's arrival and removal of a CA (pnp_mutex held).
  static void OnCaArrival(AccessLayer* al, AlCa* ca);
  static void OnCaRemoval(AccessLayer* al, AlCa* ca);

 private:
  friend class GsiAgent;
  GsiRegistration(AccessLayer* al, GsiAgentSpec spec);
  void Start(AlCa* ca);  // pnp_mutex held
  void Stop(AlCa* ca);   // pnp_mutex held
  void Deregister();

  AccessLayer* const al_;
  const GsiAgentSpec spec_;
  abi::MadSvcParams params_{};
  kernel::KSpinLock lock_;
  std::map<std::pair<AlCa*, uint8_t>, GsiAgent*> agents_;  // each holds one reference
  std::atomic<uint32_t> in_callbacks_{0};
};

}  // namespace softib::al
