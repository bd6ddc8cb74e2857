// What a client keeps registered at the SA (a ServiceRecord, a multicast membership, a
// subscription): an object created by an async verb that completes with the SA's answer.
// The object is published (its handle given out) only when the SA accepted it; a refusal,
// a timeout or the file's end before the answer leaves nothing behind (what the SA did
// accept is undone). While it lives it is in the SA client's redo list: Redo() tells the
// SA again after an SM change, a LID change, a reregister request or the port's return.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "runtime/al/src/objects.h"
#include "runtime/al/src/sa/sa_client.h"
#include "softib/kernel/dpc.h"
#include "softib/kernel/timer.h"

namespace softib::al::sa {

class SaMembership : public Waitable, public SaRedo {
 public:
  // `ioctl`: the creating verb's (its IRP waits in `waiters` until the answer).
  SaMembership(abi::ObjectType type, Instance* owner, uint32_t ioctl, const SaPort& port,
               uint32_t timeout_ms, uint32_t retries);

  // Sends the creating request; PENDING (the IRP completes with `Complete`'s status), or a
  // failure with the object destroyed. `irp` null: CANCELED (a direct call cannot wait).
  // The object is already published under `handle`; `handle_out` (in `out`, `out_size`
  // bytes) gets it only when the SA accepted.
  kernel::Status Begin(kernel::Irp* irp, uint64_t handle, void* out, std::size_t out_size,
                       uint64_t* handle_out, const SaRequest& request);

  // Tells the SA again; a Set the SA could not take yet (no answer, BUSY, or
  // ERR_NO_RESOURCES while a new master sweeps) is retried, 250 ms then doubling up to 4 s,
  // at most kMaxRedoRetries times, until it is taken or refused.
  void Redo() override;
  void Hold() override { kernel::ReferenceObject(this); }
  void Release() override { kernel::DereferenceObject(this); }
  bool OnPort(uint64_t ca_guid, uint8_t port) const override {
    return port_.ca->guid == ca_guid && port_.port == port;
  }

  const SaPort& port() const { return port_; }

 protected:
  // The SA's answer to the creating request: fill `out`, return the verb's status
  // (SUCCESS publishes the object). Not under a lock. PENDING: the subclass finishes
  // later (an IRP of its own to complete first) by calling Concluded with the status;
  // until then a destroy of the object waits (as for any answer being handled).
  virtual kernel::Status Accepted(const SaAnswer& answer, void* out) = 0;
  // The status of an Accepted that answered PENDING (once, from any thread or DPC).
  void Concluded(kernel::Status verb);
  // The request that created it, again (Redo) or to undo it (Delete), built by the subclass.
  virtual SaRequest Request(uint8_t method) = 0;
  virtual void OnPublished() {}  // after the handle is out (e.g. lease renewal)
  virtual void OnEnd() {}        // OnDestroy, before the SA is told (e.g. detach)
  virtual void OnRetold(const SaAnswer&) {}
  virtual bool ShouldUndo() {
    return true;
  }  // at the end: send the Delete  // the SA accepted a Set again (Redo, renewal)
  // Sends `method` of the record through the port's present SM (a Set's answer goes to
  // OnRetold).
  void Tell(uint8_t method);

  kernel::KSpinLock lock_;
  SaPort port_;
  const uint32_t timeout_ms_;
  const uint32_t retries_;
  bool published_ = false;  // lock_
  bool ended_ = false;      // lock_

 private:
  void Answered(kernel::Status status, const SaAnswer& answer);
  // The rest of Answered once the verb's status is known.
  void Conclude(kernel::Irp* irp, kernel::Status verb, bool accepted);
  kernel::Irp* concluding_ = nullptr;  // the creating IRP while Accepted is pending
  void OnDestroy() override;
  struct SetCall {
    SaTicket ticket;    // lock_
    bool done = false;  // lock_: its answer (or the cancel) came
  };
  void SendSet(const SaPort& port, const SaRequest& request, SaDone done);
  void Retell();     // the Set of a Redo, its answer checked
  void ArmRetell();  // a retry of it later, unless ended or out of tries
  static void RetellDpc(kernel::Kdpc*, void* context, void*, void*);
  static constexpr uint32_t kMaxRedoRetries = 12;
  kernel::Ktimer retell_timer_{};
  kernel::Kdpc retell_dpc_{};
  uint32_t retells_ = 0;  // lock_: retries since the last Redo
  Instance* const owner_;
  uint64_t handle_ = 0;
  void* out_ = nullptr;  // the creating verb's output, until answered
  std::size_t out_size_ = 0;
  uint64_t* handle_out_ = nullptr;
  SaTicket ticket_;                             // lock_: the creating request
  std::vector<std::shared_ptr<SetCall>> sets_;  // lock_: Sets in flight (SendSet)
  bool in_answer_ = false;                      // lock_: Answered runs (OnDestroy waits for it)
  bool destroying_self_ = false;                // lock_: Answered destroys the refused object
};

// The common part of the creating verbs (RegisterService, JoinMcast, SubscribeReport): the
// new `object` becomes a child of `parent` (else `invalid_parent`), is published, and sends
// its Set; `handle_out` (in `out`) gets its handle once the SA accepted.
template <typename Out>
kernel::Status StartMembership(const kernel::CallContext& ctx, SaMembership* object,
                               kernel::KernelObject* parent, kernel::Status invalid_parent,
                               kernel::Irp* irp, Out& out, uint64_t* handle_out,
                               const SaRequest& request) {
  if (object->SetParent(parent) != kernel::Status::SUCCESS) {
    kernel::DereferenceObject(object);
    return invalid_parent;
  }
  kernel::ReferenceObject(object);  // kept across Publish, for Begin
  kernel::ObjectRef hold(object);
  uint64_t handle = 0;
  if (const kernel::Status s = Publish(InstanceOf(ctx), object, &handle);
      s != kernel::Status::SUCCESS) {
    return s;
  }
  return object->Begin(irp, handle, &out, sizeof out, handle_out, request);
}

}  // namespace softib::al::sa
