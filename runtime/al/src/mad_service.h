// MAD pools and MAD services (IBAL ib_mad_pool / ib_mad_svc): a service is an agent for one
// management class and version on an alias QP of a port; its sends and receives run
// through the AL's special QP of that port (special_qp.h), and its news (send completions,
// received MADs) wait in a queue for GetMadEvent.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "runtime/al/src/objects.h"
#include "runtime/al/src/special_qp.h"
#include "softib/abi/verbs_al.h"

namespace softib::al {

// A pool of MAD buffers. The AL receives into its own buffers; the pool bounds what a
// client's services may keep queued (max_elements, 0: no limit) and is busy while a
// service uses it.
class MadPoolObj final : public AlObject {
 public:
  MadPoolObj(Instance* owner, uint32_t min_elements, uint32_t max_elements);
  const uint32_t min_elements;
  const uint32_t max_elements;
};

class MadSvcObj final : public Waitable, public MadAgent {
 public:
  MadSvcObj(Instance* owner, QpObj* qp, MadPoolObj* pool, SpecialQp* sqp,
            const abi::MadSvcParams& params);
  ~MadSvcObj() override;

  QpObj* const qp_obj;     // parent: the alias QP
  MadPoolObj* const pool;  // used (referenced, counted as its child)
  SpecialQp* const sqp;    // the special QP of the alias's port

  // Queues an event (completes a waiting GetMadEvent if any). Not with SpecialQp::lock held.
  void Post(const abi::MadEventRecord& record, std::vector<uint8_t> mad) override;
  void Hold() override { kernel::ReferenceObject(this); }
  void Release() override { kernel::DereferenceObject(this); }
  // GetMadEvent: an event at once, INSUFFICIENT_MEMORY when `mad` cannot hold the next one
  // (it stays queued), else the IRP pends.
  kernel::Status Wait(kernel::Irp* irp, abi::GetMadEventOut& out, std::span<uint8_t> mad);

 private:
  struct Event {
    abi::MadEventRecord record;
    std::vector<uint8_t> mad;
  };
  void OnDestroy() override;
  void Pump();
  static kernel::Status Fill(const Event& event, abi::GetMadEventOut& out, std::span<uint8_t> mad);

  kernel::KSpinLock events_lock_;
  std::deque<Event> events_;
};

// A send of `agent` (held by the send): `mad` is one MAD, or an RMPP transfer when
// `segmented`. A request's TID gets the agent's id in its high half (its response finds
// the agent by it); a response keeps the requester's TID.
struct MadSendSpec {
  MadAddress to;
  uint64_t context = 0;
  bool response_expected = false;
  uint32_t timeout_ms = 0;
  uint32_t retries = 0;
  bool segmented = false;
};
std::shared_ptr<MadSend> MakeMadSend(MadAgent* agent, std::span<const uint8_t> mad,
                                     const MadSendSpec& spec);

// The special QP of the alias QP's port, or the MAD QP's engine (null: neither, or the CA
// has none).
SpecialQp* SpecialQpOf(QpObj* qp);

// MAD QPs (mad_qp.cc): a new one's engine is a SpecialQp of type MAD started by its chain
// of CI IRPs (SpecialQp::Start; not yet in the CA's table: QpObj::Register adds it); its end
// (out of the table, stopped; any IRQL up to DISPATCH):
void ReleaseMadQp(const std::shared_ptr<AlCa>& ca, std::shared_ptr<SpecialQp> qp);

}  // namespace softib::al
