// The CEP object: its event queue behind CepGetEvent and its end.
#include "runtime/al/src/cm/cep.h"

#include <cstring>

#include "runtime/al/src/cm/cm.h"

namespace softib::al::cm {

using kernel::Irp;
using kernel::Status;

namespace {
constexpr std::size_t kMaxQueuedEvents = 4096;
}

CepObj::CepObj(Instance* owner, ConnectionManager* cm_in, uint64_t context_in)
    : Waitable(abi::ObjectType::Cep, owner, abi::kIoctlCepGetEvent),
      cm(cm_in),
      context(context_in) {}

CepObj::~CepObj() = default;

void CepObj::OnDestroy() {
  cm->OnCepDestroyed(this);
  StopWaiting();
  std::deque<CepEvent> left;
  {
    kernel::SpinLockGuard guard(events_lock_);
    left.swap(events_);
  }
  // New endpoints nobody took: rejected as their listen goes.
  for (CepEvent& event : left) {
    if (event.new_cep) event.new_cep.get()->ForceDestroy();
  }
}

void CepObj::Post(CepEvent event) {
  if (destroyed()) {
    if (event.new_cep) event.new_cep.get()->ForceDestroy();
    return;
  }
  {
    kernel::SpinLockGuard guard(events_lock_);
    if (events_.size() >= kMaxQueuedEvents && !event.new_cep) return;  // news dropped
    events_.push_back(std::move(event));
  }
  Pump();
}

void CepObj::Enqueue(CepEvent event) {
  kernel::SpinLockGuard guard(events_lock_);
  events_.push_back(std::move(event));
}

// Publishes a new CEP into this CEP's file as it is handed out.
Status CepObj::Fill(CepEvent& event, abi::CepGetEventOut& out) {
  out = abi::CepGetEventOut{};
  out.event = event.type;
  std::memcpy(out.mad, event.mad.data(), sizeof(out.mad));
  if (event.new_cep) {
    auto* child = static_cast<CepObj*>(event.new_cep.Release());
    out.context = child->context;
    uint64_t handle = 0;
    const Status s = Publish(owner_, child, &handle);  // takes the reference
    if (s != Status::SUCCESS) return s;
    out.new_cep.value = handle;
  } else {
    out.context = context;
  }
  return Status::SUCCESS;
}

// A waiting IRP keeps where its output goes in DriverContext[1].
void CepObj::Pump() {
  for (;;) {
    Irp* irp;
    CepEvent event;
    {
      kernel::SpinLockGuard guard(events_lock_);
      if (events_.empty()) return;
      irp = waiters.Remove();
      if (irp == nullptr) return;
      event = std::move(events_.front());
      events_.pop_front();
    }
    auto* out = static_cast<abi::CepGetEventOut*>(irp->DriverContext[1]);
    const Status s = Fill(event, *out);
    waiters.Complete(irp, s, s == Status::SUCCESS ? sizeof(*out) : 0);
  }
}

Status CepObj::Wait(Irp* irp, abi::CepGetEventOut& out) {
  CepEvent event;
  bool have = false;
  {
    kernel::SpinLockGuard guard(events_lock_);
    if (!events_.empty()) {
      event = std::move(events_.front());
      events_.pop_front();
      have = true;
    }
  }
  if (have) return Fill(event, out);
  if (irp == nullptr) return Status::CANCELED;
  irp->DriverContext[1] = &out;
  const Status status = waiters.Insert(irp);
  Pump();
  return status;
}

}  // namespace softib::al::cm
