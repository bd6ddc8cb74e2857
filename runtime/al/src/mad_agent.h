// What a special QP needs of an agent it routes MADs for: its registration (class, version,
// unsolicited methods, RMPP), its outstanding sends, and where its news go. A client's MAD
// service (MadSvcObj, news queued for GetMadEvent) and an agent the AL runs itself
// (GsiAgent, news to callbacks) are both agents.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "softib/abi/types.h"

namespace softib::al {

struct MadSend;

class MadAgent {
 public:
  explicit MadAgent(const abi::MadSvcParams& params_in) : params(params_in) {}
  virtual ~MadAgent() = default;
  MadAgent(const MadAgent&) = delete;
  MadAgent& operator=(const MadAgent&) = delete;

  const abi::MadSvcParams params;
  uint32_t agent_id = 0;  // set by SpecialQp::AddService
  // Outstanding sends by id (SpecialQp::lock).
  std::map<uint64_t, std::shared_ptr<MadSend>> sends;
  uint64_t next_send_id = 1;  // SpecialQp::lock

  bool TakesUnsolicited(uint8_t method) const {
    return params.support_unsolicited != 0 && (params.method_mask[method / 8] >> (method % 8)) & 1;
  }
  bool rmpp() const { return params.svc_type == abi::MadSvcType::RMPP; }

  // An event (a received MAD, a send's completion). Never with SpecialQp::lock held.
  virtual void Post(const abi::MadEventRecord& record, std::vector<uint8_t> mad) = 0;
  // Keeps the agent alive (while an event is on its way, while a send refers to it).
  virtual void Hold() = 0;
  virtual void Release() = 0;
};

// A held agent (a reference the holder owns).
template <typename T>
class HeldAgent {
 public:
  HeldAgent() = default;
  explicit HeldAgent(T* agent) : agent_(agent) {
    if (agent_ != nullptr) agent_->Hold();
  }
  HeldAgent(HeldAgent&& other) noexcept : agent_(std::exchange(other.agent_, nullptr)) {}
  HeldAgent& operator=(HeldAgent&& other) noexcept {
    if (this != &other) {
      Reset();
      agent_ = std::exchange(other.agent_, nullptr);
    }
    return *this;
  }
  HeldAgent(const HeldAgent&) = delete;
  HeldAgent& operator=(const HeldAgent&) = delete;
  ~HeldAgent() { Reset(); }
  T* get() const { return agent_; }
  T* operator->() const { return agent_; }
  explicit operator bool() const { return agent_ != nullptr; }
  void Reset() {
    if (agent_ != nullptr) std::exchange(agent_, nullptr)->Release();
  }

 private:
  T* agent_ = nullptr;
};
using AgentRef = HeldAgent<MadAgent>;

}  // namespace softib::al
