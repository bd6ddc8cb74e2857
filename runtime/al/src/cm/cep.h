// A communication-manager endpoint (CEP, IBAL's kernel CEP): one listen or one connection,
// its IBA 12.9 state, what the REQ/REP exchange settled (for the QP attributes), the last
// message it sent (for retries and for answering duplicates), and the events CepGetEvent
// hands out (a REQ on a listen carries the new CEP, published into the waiting file).
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <vector>

#include "runtime/al/src/objects.h"
#include "runtime/al/src/special_qp.h"
#include "softib/abi/verbs_cm.h"

namespace softib::al::cm {

class ConnectionManager;

enum class CepState : uint8_t {
  IDLE,
  LISTEN,
  REQ_SENT,
  REQ_RCVD,
  MRA_REQ_SENT,  // we asked the active side for more time for our REP
  MRA_REQ_RCVD,  // the passive side asked us for more time
  REP_SENT,
  REP_RCVD,
  MRA_REP_SENT,
  MRA_REP_RCVD,
  ESTABLISHED,
  DREQ_SENT,
  DREQ_RCVD,
  TIMEWAIT,
  SIDR_REQ_SENT,  // cm_sidr.cc: a one-shot resolution, not a connection
  SIDR_REQ_RCVD,
};

// What the connection's QP needs of one path (primary or alternate): the address of the
// remote port and the path's properties.
struct CepPath {
  abi::AddressVector av{};  // port_num: the local port
  uint8_t mtu = 0;          // PathMtu
  uint8_t packet_life_time = 0;
  uint8_t local_ack_timeout = 0;
  uint16_t pkey = 0;
  uint16_t pkey_index = 0;
};

// Loading an alternate path on an established connection (IBA 12.8, 12.9.6: the LAP
// sub-states of ESTABLISHED).
enum class LapState : uint8_t { IDLE, LAP_SENT, LAP_RCVD, MRA_LAP_SENT, MRA_LAP_RCVD };

// What a retry timer does when it expires.
enum class CepTimer : uint8_t { NONE, REQ, REP, DREQ, TIMEWAIT, LAP, SIDR };

struct CepEvent {
  abi::CepEventType type{};
  kernel::ObjectRef new_cep;  // REQ_RECEIVED on a listen: the endpoint it created
  std::array<uint8_t, 256> mad{};
};

class CepObj final : public Waitable {
 public:
  CepObj(Instance* owner, ConnectionManager* cm, uint64_t context);
  ~CepObj() override;

  ConnectionManager* const cm;
  const uint64_t context;  // a new CEP's is its listen's (IBAL's)
  Instance* owner() const { return owner_; }

  // Queues an event (completes a waiting CepGetEvent). Never with the CM's lock held.
  void Post(CepEvent event);
  // A new CEP's REQ_RECEIVED, queued under the CM's lock (so a listen's end, which takes
  // that lock first, finds it and rejects the CEP on its own thread), pumped after it.
  void Enqueue(CepEvent event);
  void Pump();
  // CepGetEvent: an event at once, else the IRP pends (a direct call without one:
  // CANCELED). A new CEP is published into this CEP's file as the event is handed out.
  kernel::Status Wait(kernel::Irp* irp, abi::CepGetEventOut& out);

  // ---- Guarded by the CM's lock ----
  CepState state = CepState::IDLE;
  bool in_tables = false;  // by local ID (and remote): the CM holds a reference
  // Listen.
  uint64_t listen_service_id = 0;  // host order
  uint64_t listen_port_guid = 0;   // host order; 0: any
  std::vector<uint8_t> compare;    // private data to match at compare_offset
  uint8_t compare_offset = 0;
  // Connection.
  std::shared_ptr<AlCa> ca;
  uint8_t port = 0;
  uint32_t local_id = 0;
  uint32_t remote_id = 0;
  uint64_t remote_ca_guid = 0;
  uint64_t service_id = 0;
  abi::QpType qp_type = abi::QpType::RC;
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  uint32_t sq_psn = 0;              // ours
  uint32_t rq_psn = 0;              // the peer's
  uint8_t responder_resources = 0;  // ours: RDMA reads/atomics we accept
  uint8_t initiator_depth = 0;      // ours: RDMA reads/atomics we issue
  uint8_t retry_count = 0;
  uint8_t rnr_retry_count = 0;  // how often we retry an RNR NAK
  uint8_t max_cm_retries = 0;
  uint8_t peer_response_timeout = 0;  // how long the peer takes to answer (2^t * 4.096 us)
  CepPath primary;
  CepPath alternate;
  bool has_alternate = false;
  // LAP/APR (cm_lap.cc): the path a LAP proposes until the APR accepts it, and whether one
  // was loaded that way (the RTS attributes are then the RTS->RTS alternate path load).
  LapState lap_state = LapState::IDLE;
  CepPath proposed;
  bool lap_loaded = false;
  std::array<uint8_t, 232> last_lap{};  // the LAP answered last: a duplicate gets the APR again
  // The last LAP, APR or MRA(LAP) we sent (retries, duplicates), apart from `last`, which
  // still answers a duplicate REP with the RTU.
  std::array<uint8_t, 256> lap_sent{};
  // SIDR (cm_sidr.cc): a received SIDR_REQ's source LID (with remote_id, its RequestID,
  // the key of duplicates).
  uint16_t sidr_slid = 0;
  MadAddress peer_cm;  // the peer's QP1
  // The last message sent: resent by the timer and for duplicates.
  std::array<uint8_t, 256> last{};
  bool has_last = false;
  // Retry timer.
  CepTimer timer = CepTimer::NONE;
  std::chrono::steady_clock::time_point deadline{};
  std::chrono::nanoseconds timeout{};
  uint32_t retries_left = 0;

 private:
  void OnDestroy() override;
  kernel::Status Fill(CepEvent& event, abi::CepGetEventOut& out);

  kernel::KSpinLock events_lock_;
  std::deque<CepEvent> events_;
};

}  // namespace softib::al::cm
