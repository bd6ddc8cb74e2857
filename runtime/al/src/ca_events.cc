// The CAs the AL knows: arrival (CI interface, filter, event IRP), the event IRP kept
// pending on the CA device (the inverted call inside the kernel), routing of its news to
// the objects, and removal. PnP records for the AL's registrations.
#include <endian.h>
#include <optional>

#include "runtime/al/src/ci_call.h"
#include "runtime/al/src/gsi_agent.h"
#include "runtime/al/src/ioc/ioc_pnp.h"
#include "runtime/al/src/objects.h"
#include "runtime/al/src/sa/sa_client.h"
#include "runtime/al/src/special_qp.h"
#include "softib/kernel/io.h"

namespace softib::al {

using kernel::Irp;
using kernel::Status;

Status CreateFilter(AccessLayer* al, AlCa* ca);  // al_driver.cc

AlCa::AlCa(AccessLayer* al_in, ci::CaInterface* ci_in)
    : al(al_in), ci(ci_in), guid(ci_in->node_guid()) {}

AlCa::~AlCa() {
  if (event_irp != nullptr) kernel::IoFreeIrp(event_irp);
  ci->Dereference();
}

namespace {

kernel::CompletionAction EventIrpDone(kernel::DeviceObject*, Irp* irp, void* context) {
  auto* ca = static_cast<AlCa*>(context);
  if (irp->IoStatus.Status == Status::SUCCESS) {
    ca->ProcessBatch();  // re-sends the IRP, or lets it come home, once done
  } else {
    kernel::KeSetEvent(&ca->event_irp_home);
  }
  return kernel::CompletionAction::kMoreProcessingRequired;  // ours: never freed by the I/O manager
}

void SendEventIrp(AlCa* ca) {
  Irp* irp = ca->event_irp;
  kernel::IoReuseIrp(irp, Status::SUCCESS);
  kernel::IoStackLocation* next = kernel::IoGetNextIrpStackLocation(irp);
  next->MajorFunction = kernel::IrpMajor::kInternalDeviceControl;
  next->Parameters.DeviceIoControl.IoControlCode = ci::kIoctlCiWaitEvents;
  next->Parameters.DeviceIoControl.InputBufferLength = 0;
  next->Parameters.DeviceIoControl.OutputBufferLength = sizeof(ci::CaEventBatch);
  irp->AssociatedIrp.SystemBuffer = &ca->batch;
  kernel::IoSetCompletionRoutine(irp, &EventIrpDone, ca, true, true, true);
  kernel::IoCallDriver(ca->lower, irp);
}

void RepostDpc(kernel::Kdpc*, void* context, void*, void*) {
  auto* ca = static_cast<AlCa*>(context);
  if (ca->removed.load()) {
    kernel::KeSetEvent(&ca->event_irp_home);
    return;
  }
  SendEventIrp(ca);
}

enum class EventObject { kQp, kCq, kSrq, kCa };

// What the device's `object` number names, by event type (IBA 11.6.3).
EventObject ObjectOf(abi::AsyncEventType type) {
  using T = abi::AsyncEventType;
  switch (type) {
    case T::CQ_ERROR:
    case T::CQ_OVERFLOW:
      return EventObject::kCq;
    case T::SRQ_LIMIT_REACHED:
    case T::SRQ_CATASTROPHIC:
      return EventObject::kSrq;
    case T::SQ_ERROR:
    case T::SQ_DRAINED:
    case T::RQ_ERROR:
    case T::QP_FATAL:
    case T::QP_COMM_ESTABLISHED:
    case T::QP_PATH_MIGRATED:
    case T::QP_PATH_MIGRATE_ERROR:
    case T::WQ_REQ_ERROR:
    case T::WQ_ACCESS_ERROR:
    case T::SRQ_QP_LAST_WQE_REACHED:
      return EventObject::kQp;
    default:
      return EventObject::kCa;
  }
}

abi::PnpEventRecord CaRecord(const AlCa& ca, abi::PnpEvent event) {
  abi::PnpEventRecord record{};
  record.event = event;
  record.guid = htobe64(ca.guid);
  record.ca_guid = htobe64(ca.guid);
  return record;
}

std::vector<abi::PnpEventRecord> PortRecords(AlCa& ca, bool add) {
  std::vector<abi::PnpEventRecord> records;
  // From the cache even once the CA is removed: a PORT_REMOVE names the port it was.
  std::vector<abi::PortAttributes> ports;
  {
    kernel::SpinLockGuard guard(ca.lock);
    for (const AlCa::CachedPort& p : ca.cached_ports) ports.push_back(p.attributes);
  }
  const bool known = ports.size() == ca.ci->num_ports();
  for (uint8_t p = 1; p <= ca.ci->num_ports(); ++p) {
    abi::PnpEventRecord record =
        CaRecord(ca, add ? abi::PnpEvent::PORT_ADD : abi::PnpEvent::PORT_REMOVE);
    record.port_num = p;
    if (known) {
      record.port = ports[p - 1];
      record.guid = ports[p - 1].port_guid;  // already network order
    }
    records.push_back(record);
    if (add && known && ports[p - 1].link_state == 4) {
      record.event = abi::PnpEvent::PORT_ACTIVE;
      records.push_back(record);
    }
  }
  return records;
}

// A port that entered or left ACTIVE, for the PORT class registrations (IBAL's
// IB_PNP_PORT_ACTIVE / IB_PNP_PORT_DOWN), with the port's attributes as they are now.
abi::PnpEventRecord PortChangeRecord(AlCa& ca, uint8_t port, abi::PnpEvent event) {
  abi::PnpEventRecord record = CaRecord(ca, event);
  record.port_num = port;
  abi::PortAttributes attributes;
  if (ca.CachedPortAttributes(port, &attributes)) {  // refreshed for this event
    record.port = attributes;
    record.guid = attributes.port_guid;  // already network order
  }
  return record;
}

// The PORT class PnP event of a port's asynchronous event (IBAL's IB_PNP_PORT_* news);
// none for the rest. CLIENT_REREGISTER stays an asynchronous event: it asks for the
// subscriptions to be made again and changes nothing a PnP client reads.
std::optional<abi::PnpEvent> PortPnpEvent(abi::AsyncEventType type) {
  switch (type) {
    case abi::AsyncEventType::PORT_ACTIVE:
      return abi::PnpEvent::PORT_ACTIVE;
    case abi::AsyncEventType::PORT_DOWN:
      return abi::PnpEvent::PORT_DOWN;
    case abi::AsyncEventType::LID_CHANGE:
      return abi::PnpEvent::LID_CHANGE;
    case abi::AsyncEventType::PKEY_CHANGE:
      return abi::PnpEvent::PKEY_CHANGE;
    case abi::AsyncEventType::SM_CHANGE:
      return abi::PnpEvent::SM_CHANGE;
    case abi::AsyncEventType::GID_CHANGE:
      return abi::PnpEvent::GID_CHANGE;
    default:
      return std::nullopt;
  }
}

void PostTo(AccessLayer* al, abi::PnpClass pnp_class,
            const std::vector<abi::PnpEventRecord>& records) {
  std::vector<kernel::ObjectRef> regs;
  {
    kernel::SpinLockGuard guard(al->lock);
    for (PnpRegObj* reg : al->pnp_regs) {
      if (reg->pnp_class != pnp_class) continue;
      kernel::ReferenceObject(reg);
      regs.emplace_back(reg);
    }
  }
  for (auto& ref : regs) {
    for (const auto& record : records) static_cast<PnpRegObj*>(ref.get())->Post(record);
  }
}

}  // namespace

void AlCa::StartEvents() {
  event_irp = kernel::IoAllocateIrp(lower->StackSize);
  kernel::KeInitializeDpc(&repost_dpc, al->node, &RepostDpc, this);
  kernel::KeResetEvent(&event_irp_home);
  SendEventIrp(this);
}

namespace {

// A port's news that changes what the cache holds: refreshed before it is announced.
bool RefreshesCache(const ci::CaEvent& event) {
  return event.kind != ci::CaEventKind::kCompletion && ObjectOf(event.type) == EventObject::kCa &&
         (PortPnpEvent(event.type).has_value() ||
          event.type == abi::AsyncEventType::CLIENT_REREGISTER);
}

// The event IRP's batch, in order, in the IRP's completion routine and, past an event that
// refreshes the cache, in the completions of the query IRPs (at DISPATCH when they pend).
// The batch buffer is not reused before the IRP is re-sent, at the end.
kernel::IrpTask ProcessBatchTask(AlCa* ca) {
  for (uint32_t i = 0; i < ca->batch.count && i < ci::kMaxEventsPerBatch; ++i) {
    const ci::CaEvent event = ca->batch.events[i];
    if (RefreshesCache(event) && !ca->removed.load()) {
      const auto port = static_cast<uint8_t>(event.object);
      co_await AwaitDone([ca, port](std::function<void()> resume) {
        ca->RefreshAttributes(port, std::move(resume));
      });
    }
    ca->Dispatch(event);
  }
  if (!ca->removed.load()) {
    // Re-sent from a DPC, never from here: a CA with news queued completes at once and
    // this would recurse.
    kernel::KeInsertQueueDpc(&ca->repost_dpc, nullptr, nullptr);
  } else {
    kernel::KeSetEvent(&ca->event_irp_home);
  }
}

}  // namespace

void AlCa::ProcessBatch() { ProcessBatchTask(this); }

void AlCa::Dispatch(const ci::CaEvent& event) {
  if (event.kind == ci::CaEventKind::kCompletion) {
    // The AL's own special QPs first (they live as long as this AlCa).
    bool mine = false;
    for (const auto& sqp : special_qps) {
      if (sqp && sqp->cq() == event.object) {
        sqp->OnCompletion();
        mine = true;
        break;
      }
    }
    if (mine) return;
    if (std::shared_ptr<SpecialQp> mad_qp = MadQpOfCq(event.object)) {
      mad_qp->OnCompletion();
      return;
    }
    kernel::ObjectRef cq;
    {
      kernel::SpinLockGuard guard(lock);
      auto it = cqs.find(event.object);
      if (it != cqs.end()) {
        kernel::ReferenceObject(it->second);
        cq = kernel::ObjectRef(it->second);
      }
    }
    if (cq) static_cast<CqObj*>(cq.get())->Notify();
    return;
  }
  // A port event that does not change the AL's view of the port is stale: dropped.
  const bool port_change = event.type == abi::AsyncEventType::PORT_ACTIVE ||
                           event.type == abi::AsyncEventType::PORT_DOWN;
  if (port_change) {
    const bool active = event.type == abi::AsyncEventType::PORT_ACTIVE;
    kernel::SpinLockGuard guard(lock);
    if (event.object < 1 || event.object > port_active.size() ||
        port_active[event.object - 1] == active) {
      return;
    }
    port_active[event.object - 1] = active;
  }
  // An asynchronous event: to the Al of the object it concerns, or of every open of the CA.
  abi::AsyncEventRecord record{};
  record.code = event.type;
  std::vector<std::pair<kernel::ObjectRef, abi::AsyncEventRecord>> targets;
  {
    kernel::SpinLockGuard guard(lock);
    auto add = [&](CaObj* ca_obj, abi::AsyncEventRecord r) {
      kernel::ReferenceObject(ca_obj->al_obj);
      r.ca.value = ca_obj->handle;
      targets.emplace_back(kernel::ObjectRef(ca_obj->al_obj), r);
    };
    switch (ObjectOf(event.type)) {
      case EventObject::kQp:
        if (auto q = qps.find(event.object); q != qps.end()) {
          record.qp.value = q->second->handle;
          record.context = q->second->context;
          add(q->second->pd_obj->ca_obj, record);
        }
        break;
      case EventObject::kCq:
        if (auto c = cqs.find(event.object); c != cqs.end()) {
          record.cq.value = c->second->handle;
          record.context = c->second->context;
          add(c->second->ca_obj, record);
        }
        break;
      case EventObject::kSrq:
        if (auto q = srqs.find(event.object); q != srqs.end()) {
          record.srq.value = q->second->handle;
          record.context = q->second->context;
          add(q->second->pd_obj->ca_obj, record);
        }
        break;
      case EventObject::kCa:
        record.port_num = static_cast<uint8_t>(event.object);
        for (CaObj* open : opens) {
          record.context = open->context;
          add(open, record);
        }
        break;
    }
  }
  for (auto& [al_obj, r] : targets) static_cast<AlObj*>(al_obj.get())->Post(r);
  // I/O units may have come into reach (or left it): sweep for them again.
  if (event.type == abi::AsyncEventType::PORT_ACTIVE ||
      event.type == abi::AsyncEventType::LID_CHANGE ||
      event.type == abi::AsyncEventType::SM_CHANGE) {
    if (al->ioc_pnp) al->ioc_pnp->Kick();
  }
  // The SA client drops the port's cached paths and re-registers what the SM may have lost.
  if (ObjectOf(event.type) == EventObject::kCa && al->sa_client) {
    al->sa_client->OnPortEvent(*this, static_cast<uint8_t>(event.object), event.type);
  }
  // A change of the port's state or of what the SM set in it is also PnP news (DESIGN:
  // a port changing state reaches registered clients as PnP events).
  if (const std::optional<abi::PnpEvent> pnp = PortPnpEvent(event.type)) {
    PostTo(al, abi::PnpClass::PORT,
           {PortChangeRecord(*this, static_cast<uint8_t>(event.object), *pnp)});
  }
}

void AccessLayer::OnCaArrival(kernel::DeviceObject* device) {
  // Query the CI of the CA (IRP_MN_QUERY_INTERFACE in WDM).
  ci::CiQueryInterfaceOut query{};
  Irp* irp = kernel::IoBuildDeviceIoControlRequest(ci::kIoctlCiQueryInterface, device, nullptr, 0,
                                                   &query, sizeof(query), true);
  if (irp == nullptr || kernel::IoCallDriverAndWait(device, irp) != Status::SUCCESS) return;
  auto ca = std::make_shared<AlCa>(this, query.ci);
  ca->lower = device;
  if (CreateFilter(this, ca.get()) != Status::SUCCESS) return;
  // The CA's attributes and tables reach the cache by CI query IRPs. This PnP worker waits
  // for that chain's last completion: it is the start of the device (as a WDM FDO's
  // IRP_MN_START_DEVICE waits for the start below it), not AL code waiting for the HCA in
  // a client's or a completion's path, and taking the CA in needs pnp_mutex (PASSIVE),
  // which the chain's completions (DISPATCH in pend mode) may not take.
  // The special QPs' setup chains run alongside.
  kernel::KEvent up{kernel::EventType::kNotification, false};
  std::atomic<int> chains{2};
  auto chain_done = [&up, &chains] {
    if (chains.fetch_sub(1, std::memory_order_acq_rel) == 1) kernel::KeSetEvent(&up);
  };
  ca->RefreshAttributes(0, chain_done);
  ca->StartSpecialQps(chain_done);
  kernel::KeWaitForSingleObject(&up);
  // A port whose special QP could not start keeps it stopped: MAD services on it answer
  // INSUFFICIENT_RESOURCES, the rest of the CA works.
  for (std::size_t i = 0; i < ca->special_qps.size(); ++i) {
    if (ca->special_qp_status[i] != Status::SUCCESS) ca->special_qps[i]->Stop();
  }
  ca->InitPortView();
  pnp_mutex.Acquire();
  {
    kernel::SpinLockGuard guard(lock);
    cas.push_back(ca);
  }
  GsiRegistration::OnCaArrival(this, ca.get());
  ca->StartEvents();
  BroadcastCaEvent(*ca, abi::PnpEvent::CA_ADD);
  pnp_mutex.Release();
}

void AlCa::InitPortView() {
  kernel::SpinLockGuard guard(lock);  // from the cache its arrival filled
  port_active.assign(ci->num_ports(), false);
  for (std::size_t i = 0; i < cached_ports.size() && i < port_active.size(); ++i) {
    port_active[i] = cached_ports[i].attributes.link_state == 4;
  }
}

void AlCa::StartSpecialQps(std::function<void()> done) {
  for (uint8_t port = 1; port <= ci->num_ports(); ++port) {
    for (abi::QpType type : {abi::QpType::SMI, abi::QpType::GSI}) {
      special_qps.push_back(std::make_unique<SpecialQp>(this, port, type));
    }
  }
  special_qp_status.assign(special_qps.size(), Status::PENDING);
  if (special_qps.empty()) return done();
  // Every chain holds one count, the starter one more (a chain may finish inline).
  auto left = std::make_shared<std::atomic<std::size_t>>(special_qps.size() + 1);
  auto one_done = [left, done] {
    if (left->fetch_sub(1, std::memory_order_acq_rel) == 1) done();
  };
  for (std::size_t i = 0; i < special_qps.size(); ++i) {
    special_qps[i]->Start([this, i, one_done](Status s) {
      special_qp_status[i] = s;
      one_done();
    });
  }
  one_done();
}

void AlCa::StopSpecialQps() {
  for (const auto& sqp : special_qps) sqp->Stop();
  std::vector<std::shared_ptr<SpecialQp>> clients;
  {
    kernel::SpinLockGuard guard(lock);
    for (const auto& [cq, qp] : mad_qps) clients.push_back(qp);
  }
  for (const auto& qp : clients) qp->Stop();
}

void AccessLayer::OnCaRemoval(AlCa* ca) {
  if (ca->removed.exchange(true)) return;
  pnp_mutex.Acquire();
  GsiRegistration::OnCaRemoval(this, ca);  // before their QPs stop
  pnp_mutex.Release();
  ca->StopSpecialQps();
  pnp_mutex.Acquire();
  // Port removals, then the CA's (IBAL's order: ports go before their CA).
  PostTo(this, abi::PnpClass::PORT, PortRecords(*ca, false));
  BroadcastCaEvent(*ca, abi::PnpEvent::CA_REMOVE);
  // Waiters on the CA's CQs will never be notified again.
  std::vector<kernel::ObjectRef> cqs;
  {
    kernel::SpinLockGuard guard(ca->lock);
    for (auto& [number, cq] : ca->cqs) {
      kernel::ReferenceObject(cq);
      cqs.emplace_back(cq);
    }
  }
  for (auto& cq : cqs) static_cast<CqObj*>(cq.get())->waiters.CancelAll();
  {
    kernel::SpinLockGuard guard(lock);
    std::erase_if(cas, [ca](const std::shared_ptr<AlCa>& known) { return known.get() == ca; });
  }
  pnp_mutex.Release();
}

void AccessLayer::BroadcastCaEvent(AlCa& ca, abi::PnpEvent event) {
  if (event == abi::PnpEvent::CA_ADD) {
    PostTo(this, abi::PnpClass::CA, {CaRecord(ca, event)});
    PostTo(this, abi::PnpClass::PORT, PortRecords(ca, true));
  } else {
    PostTo(this, abi::PnpClass::CA, {CaRecord(ca, event)});
  }
}

// The records a new registration gets for what exists, then REG_COMPLETE.
void PostExisting(AccessLayer* al, PnpRegObj* reg) {
  for (const auto& ca : al->Cas()) {
    if (ca->removed.load()) continue;  // its removal was announced already
    if (reg->pnp_class == abi::PnpClass::CA) {
      reg->Post(CaRecord(*ca, abi::PnpEvent::CA_ADD));
    } else if (reg->pnp_class == abi::PnpClass::PORT) {
      for (const auto& record : PortRecords(*ca, true)) reg->Post(record);
    }
  }
  if (reg->pnp_class == abi::PnpClass::IOU || reg->pnp_class == abi::PnpClass::IOC) {
    al->ioc_pnp->PostPresent(reg);
    al->ioc_pnp->Kick();  // what is out there now, beyond the last sweep
  }
  abi::PnpEventRecord done{};
  done.event = abi::PnpEvent::REG_COMPLETE;
  reg->Post(done);
}

}  // namespace softib::al
