#include "runtime/al/src/sa/sa_membership.h"

#include <endian.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

namespace softib::al::sa {

using kernel::Irp;
using kernel::Status;

SaMembership::SaMembership(abi::ObjectType type, Instance* owner, uint32_t ioctl,
                           const SaPort& port, uint32_t timeout_ms, uint32_t retries)
    : Waitable(type, owner, ioctl),
      port_(port),
      timeout_ms_(timeout_ms),
      retries_(retries),
      owner_(owner) {
  kernel::KeInitializeTimer(&retell_timer_, owner->al->node);
  kernel::KeInitializeDpc(&retell_dpc_, owner->al->node, &RetellDpc, this);
}

Status SaMembership::Begin(Irp* irp, uint64_t handle, void* out, std::size_t out_size,
                           uint64_t* handle_out, const SaRequest& request) {
  handle_ = handle;
  out_ = out;
  out_size_ = out_size;
  handle_out_ = handle_out;
  *handle_out = 0;
  if (irp == nullptr) {  // a direct call without an IRP cannot wait for the SA
    owner_->table.Destroy(handle, type());
    return Status::CANCELED;
  }
  waiters.Insert(irp);
  Hold();  // the request's, until Answered ran
  SaTicket ticket;
  const Status status = SaOf(al_)->Send(
      port_, request, timeout_ms_, retries_,
      [this](Status result, const SaAnswer& answer) {
        Answered(result, answer);
        Release();
      },
      &ticket);
  if (status != Status::SUCCESS) {
    Release();
    Answered(Status::INSUFFICIENT_MEMORY, SaAnswer{});
    return Status::PENDING;
  }
  kernel::SpinLockGuard guard(lock_);
  ticket_ = ticket;
  return Status::PENDING;
}

void SaMembership::Answered(Status status, const SaAnswer& answer) {
  const bool accepted = status == Status::SUCCESS && answer.valid && answer.mad_status == 0;
  bool ended;
  {
    kernel::SpinLockGuard guard(lock_);
    ticket_ = {};
    ended = ended_;
    in_answer_ = !ended;
  }
  if (ended) {
    // The object went first (its file's end): what the SA accepted is undone.
    if (accepted) Tell(kDelete);
    return;
  }
  Irp* irp = waiters.Remove();
  Status verb = status;
  if (irp == nullptr) {
    verb = Status::CANCELED;
  } else if (status == Status::SUCCESS) {
    // Set first: a PENDING Accepted may conclude before it returns (its IRP completed inline).
    concluding_ = irp;
    verb = !answer.valid            ? Status::TIMEOUT
           : answer.mad_status != 0 ? Status::REMOTE_ERROR
                                    : Accepted(answer, out_);
    // PENDING: Concluded continues (in_answer_ stays set until then), maybe already did.
    if (verb == Status::PENDING) return;
    concluding_ = nullptr;
  }
  Conclude(irp, verb, accepted);
}

void SaMembership::Concluded(Status verb) {
  Conclude(std::exchange(concluding_, nullptr), verb, true);
}

void SaMembership::Conclude(Irp* irp, Status verb, bool accepted) {
  if (verb == Status::SUCCESS) {
    *handle_out_ = handle_;
    {
      kernel::SpinLockGuard guard(lock_);
      published_ = true;
      in_answer_ = false;
    }
    SaOf(al_)->AddRedo(this);
    OnPublished();
    waiters.Complete(irp, Status::SUCCESS, out_size_);
    return;
  }
  if (accepted) Tell(kDelete);
  {
    kernel::SpinLockGuard guard(lock_);
    destroying_self_ = true;
  }
  owner_->table.Destroy(handle_, type());
  {
    kernel::SpinLockGuard guard(lock_);
    in_answer_ = false;
  }
  if (irp != nullptr) waiters.Complete(irp, verb, 0);
}

void SaMembership::Tell(uint8_t method) {
  // The port as it is now: the SM (its LID) may have changed since the last request.
  SaPort now;
  if (SaOf(al_)->FindPort(htobe64(port_.port_guid), &now) != Status::SUCCESS) return;
  const SaRequest request = Request(method);
  if (method != kSet) {
    SaOf(al_)->Send(now, request, timeout_ms_, retries_, [](Status, const SaAnswer&) {});
    return;
  }
  SendSet(now, request, [this](Status s, const SaAnswer& answer) {
    if (s == Status::SUCCESS && answer.valid && answer.mad_status == 0) OnRetold(answer);
  });
}

// A Set of the record again (a renewal, a Redo), its answer to `done`. The object is held
// until the answer; its end (OnDestroy) cancels the request, so a file's end does not wait
// for an SA that no longer answers (up to timeout × tries) to let the object and its file go.
void SaMembership::SendSet(const SaPort& port, const SaRequest& request, SaDone done) {
  auto call = std::make_shared<SetCall>();
  {
    kernel::SpinLockGuard guard(lock_);
    if (ended_) return;
  }
  Hold();
  SaTicket ticket;
  const Status status = SaOf(al_)->Send(
      port, request, timeout_ms_, retries_,
      [this, call, done = std::move(done)](Status s, const SaAnswer& answer) {
        {
          kernel::SpinLockGuard guard(lock_);
          call->done = true;
          std::erase(sets_, call);
        }
        done(s, answer);
        Release();
      },
      &ticket);
  if (status != Status::SUCCESS) {
    Release();
    return;
  }
  bool cancel = false;
  {
    kernel::SpinLockGuard guard(lock_);
    if (!call->done) {
      call->ticket = ticket;
      cancel = ended_;  // OnDestroy ran meanwhile: it did not see this one
      if (!cancel) sets_.push_back(call);
    }
  }
  if (cancel) SaOf(al_)->Cancel(ticket);
}

void SaMembership::Redo() {
  {
    kernel::SpinLockGuard guard(lock_);
    if (ended_ || !published_) return;
    retells_ = 0;
  }
  Retell();
}

namespace {

// An SA that could not take the request now: no answer, BUSY (IBA 13.4.7), or
// ERR_NO_RESOURCES (softib's SA while a sweep rebuilds its model, a new master's first).
bool TryAgainLater(Status status, const SaAnswer& answer) {
  if (status == Status::CANCELED) return false;  // the port or the AL went
  if (status != Status::SUCCESS || !answer.valid) return true;
  constexpr uint16_t kBusy = 0x0001, kNoResources = 0x0100;
  return (answer.mad_status & kBusy) != 0 || (answer.mad_status & 0xFF00) == kNoResources;
}

}  // namespace

void SaMembership::Retell() {
  SaPort now;  // the port's present SM; a port that is not active redoes at its return
  if (SaOf(al_)->FindPort(htobe64(port_.port_guid), &now) != Status::SUCCESS) return;
  SendSet(now, Request(kSet), [this](Status s, const SaAnswer& answer) {
    if (s == Status::SUCCESS && answer.valid && answer.mad_status == 0) {
      OnRetold(answer);
    } else if (TryAgainLater(s, answer)) {
      ArmRetell();
    }
  });
}

void SaMembership::ArmRetell() {
  kernel::SpinLockGuard guard(lock_);
  if (ended_ || retells_ >= kMaxRedoRetries) return;
  const auto delay =
      std::chrono::milliseconds(std::min<uint32_t>(250u << std::min(retells_, 4u), 4000u));
  ++retells_;
  Hold();
  if (kernel::KeSetTimer(&retell_timer_, delay, &retell_dpc_)) Release();  // one per pending DPC
}

void SaMembership::RetellDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* self = static_cast<SaMembership*>(context);
  bool ended;
  {
    kernel::SpinLockGuard guard(self->lock_);
    ended = self->ended_;
  }
  if (!ended) self->Retell();
  self->Release();
}

void SaMembership::OnDestroy() {
  bool published;
  SaTicket ticket;
  std::vector<std::shared_ptr<SetCall>> sets;
  for (;;) {
    kernel::SpinLockGuard guard(lock_);
    ended_ = true;
    // An answer being handled finishes first (it may still publish or refuse).
    if (in_answer_ && !destroying_self_) continue;
    published = published_;
    ticket = ticket_;
    sets.swap(sets_);
    break;
  }
  StopWaiting();
  if (kernel::KeCancelTimer(&retell_timer_)) Release();
  SaOf(al_)->RemoveRedo(this);
  if (ticket) SaOf(al_)->Cancel(ticket);
  for (const auto& set : sets) SaOf(al_)->Cancel(set->ticket);
  OnEnd();
  if (published && ShouldUndo()) Tell(kDelete);
}

}  // namespace softib::al::sa
