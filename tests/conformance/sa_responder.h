// The harness's subnet administrator, so that the SA client verbs (SendSaRequest,
// RegisterService, SubscribeReport, JoinMcast, ...) complete on the harness's node, which has
// no SM: a MAD service of class SubnAdm on a GSI alias QP of the second CA's port (FarEnd),
// answered on its own thread, and the first CA's port told that the SM is there
// (PortInfo:MasterSMLID through LocalMad). It keeps no tables and judges nothing: a Get, Set
// or Delete gets its record back (an MCMemberRecord with an MLID), a GetTable answers
// ERR_NO_RECORDS. ulp/sm's SA is the real one; the SA client's own behaviour is tested in
// runtime/al/tests/sa_client_test.cc and tests/integration/sa_user_test.cc.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "softib/abi/types.h"
#include "softib/kernel/event.h"

#include "far_end.h"

namespace softib::conformance {

class SaResponder {
 public:
  SaResponder(kernel::Node* node, kernel::DeviceObject* client, uint64_t sa_ca_guid)
      : node_(node), end_(node, client, sa_ca_guid) {}
  ~SaResponder() { Stop(); }
  SaResponder(const SaResponder&) = delete;
  SaResponder& operator=(const SaResponder&) = delete;

  // Registers the service, starts answering, and makes the SA the master SM of port 1 of CA
  // `client_ca_guid` (host order). False (with the reason on stderr) on failure.
  bool Start(uint64_t client_ca_guid);
  void Stop();
  // Requests answered so far.
  uint64_t answered() const { return answered_.load(); }
  // Returns once the thread waits for a MAD with none delivered to it: every request the AL
  // has handed it is answered (the answers queued in the node). The harness calls it before
  // it judges a wait verb still pending (verb_env.h's SetSettleHook).
  void Settle();

 private:
  void Run();
  bool SetMasterSm(uint64_t ca_guid);
  bool NextPnpEvent(uint64_t reg, abi::PnpEvent event, uint64_t ca_guid_be);
  void Answer(const abi::MadEventRecord& from, const std::vector<uint8_t>& request);

  kernel::Node* const node_;
  FarEnd end_;  // its own kernel client, never reset
  uint64_t qp_ = 0, pool_ = 0, svc_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};  // the thread cancels its pending GetMadEvent and ends
  std::atomic<uint64_t> answered_{0};
  std::mutex idle_mutex_;
  std::condition_variable idle_cv_;
  const kernel::KEvent* waiting_on_ = nullptr;  // the pending GetMadEvent's event, while waiting
};

}  // namespace softib::conformance
