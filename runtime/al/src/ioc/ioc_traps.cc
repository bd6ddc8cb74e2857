#include "runtime/al/src/ioc/ioc_traps.h"

#include "runtime/al/src/ioc/ioc_pnp.h"
#include "runtime/al/src/sa/sa_mad.h"

namespace softib::al::ioc {

using kernel::Status;

namespace {
constexpr uint32_t kSubscribeTimeoutMs = 500;
constexpr uint32_t kSubscribeRetries = 2;
}  // namespace

void TrapWatch::Subscribe() {
  sa::SaOf(al_)->AddRedo(this);
  Redo();
}

void TrapWatch::End() {
  {
    kernel::SpinLockGuard guard(lock_);
    pnp_ = nullptr;
  }
  sa::SaOf(al_)->RemoveRedo(this);
  Release();
}

void TrapWatch::Redo() {
  {
    kernel::SpinLockGuard guard(lock_);
    if (pnp_ == nullptr) return;
  }
  // The port as it is now (its SM, its LID); nothing while it is not active.
  sa::SaPort port;
  if (sa::SaOf(al_)->FindPort(port_guid_be_, &port) != Status::SUCCESS) return;
  for (const uint16_t trap : kTraps) {
    const auto info = sa::InformInfo(trap, true);
    sa::SaRequest request;
    request.method = sa::kSet;
    request.attribute_id = sa::kInformInfoAttribute;
    request.attribute = info;
    // A refusal or a timeout leaves discovery to its polls; the SA's answer says nothing
    // else we need.
    (void)sa::SaOf(al_)->Send(port, request, kSubscribeTimeoutMs, kSubscribeRetries,
                              [](Status, const sa::SaAnswer&) {});
  }
}

void TrapWatch::Release() {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

void TrapWatch::OnReport(std::span<const uint8_t> notice) {
  if (notice.size() < sa::kNoticeBytes || (notice[0] & 0x80) == 0) return;  // generic only
  const uint16_t number = static_cast<uint16_t>(notice[4] << 8 | notice[5]);
  bool ours = false;
  for (const uint16_t trap : kTraps) ours = ours || trap == number;
  if (!ours) return;
  kernel::SpinLockGuard guard(lock_);
  if (pnp_ != nullptr) pnp_->Kick();
}

}  // namespace softib::al::ioc
