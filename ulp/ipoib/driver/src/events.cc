// Port events: the interface registers with the AL for PORT PnP events (through its PDO)
// and keeps one GetPnpEvent IRP pending, continued in its completion routine. For its own
// port: PORT_DOWN takes the carrier down and drops the neighbours' paths; PORT_ACTIVE and
// what an SM changes in the port (LID, SM, GID, P_Key) take the new attributes, drop the
// paths (resolved again on demand), re-join every group, and the carrier comes back when
// the broadcast group answers; the ATS records are registered again then.
#include <endian.h>

#include <cstring>

#include "internal.h"
#include "kernel/runtime_ioctls_direct.h"
#include "kernel/verbs_al_direct.h"

namespace softib::ipoib {

using kernel::Status;

namespace {

void IssuePnpEvent(Interface* i);

void OnPortEvent(Interface* i, const abi::PnpEventRecord& record) {
  const abi::PnpEvent event = record.event;
  const bool down = event == abi::PnpEvent::PORT_DOWN || event == abi::PnpEvent::PORT_REMOVE;
  const bool change = event == abi::PnpEvent::PORT_ACTIVE || event == abi::PnpEvent::LID_CHANGE ||
                      event == abi::PnpEvent::SM_CHANGE || event == abi::PnpEvent::GID_CHANGE ||
                      event == abi::PnpEvent::PKEY_CHANGE;
  if (!down && !change) return;
  std::vector<uint64_t> avs;
  bool rejoin = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->stopping) return;
    ++i->generation;
    FlushPathsLocked(i, &avs);
    IbatForgetLocked(i);
    if (down) {
      i->port_up = false;
    } else {
      i->port_up = record.port.link_state == 4;
      i->lid = record.port.lid;
      i->port_guid_be = record.port.port_guid;
      i->subnet_prefix_be = record.port.subnet_prefix;
      std::memcpy(i->local.hw.gid.data(), &record.port.subnet_prefix, 8);
      std::memcpy(i->local.hw.gid.data() + 8, &record.port.port_guid, 8);
      rejoin = i->port_up;
    }
  }
  SetCarrier(i, false);
  CmDropAll(i);  // connected mode: DREQ each connection; made again on demand
  DestroyAvs(i, avs);
  if (rejoin) RejoinAll(i);
}

// Before REG_COMPLETE the AL replays the port as it is at registration (PORT_ADD, then
// PORT_ACTIVE when active). Set-up read the port a moment earlier, while an SM may still have
// been bringing it up: what differs from that reading is news.
void OnReplayedState(Interface* i, abi::PnpEventRecord record) {
  bool news = false;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (record.event == abi::PnpEvent::PORT_ACTIVE) {
      news = !i->port_up || record.port.lid != i->lid || record.port.port_guid != i->port_guid_be ||
             record.port.subnet_prefix != i->subnet_prefix_be;
    } else if (record.event == abi::PnpEvent::PORT_ADD && record.port.link_state != 4 &&
               i->port_up) {
      news = true;
      record.event = abi::PnpEvent::PORT_DOWN;
    }
  }
  if (news) OnPortEvent(i, record);
}

void IssuePnpEvent(Interface* i) {
  if (Stopping(i)) return;
  kernel::Irp* irp = kernel::BuildGetPnpEventIrp(i->pdo, i->file, {{i->pnp_reg}}, &i->pnp_event);
  SendVerb(i, irp, &i->pnp_event, sizeof i->pnp_event, [i](Status status, uint64_t) {
    if (status != Status::SUCCESS) return;  // CANCELED: the interface stops
    const abi::PnpEventRecord record = i->pnp_event.record;
    if (record.event == abi::PnpEvent::REG_COMPLETE) {
      i->pnp_settled = true;
    } else if (i->port != nullptr && be64toh(record.ca_guid) == i->port->ca_guid &&
               record.port_num == i->port->port) {
      if (i->pnp_settled) {
        OnPortEvent(i, record);
      } else {
        OnReplayedState(i, record);
      }
    }
    IssuePnpEvent(i);
  });
}

}  // namespace

Status StartPortEvents(Interface* i) {
  abi::RegisterPnpIn in{};
  in.al.value = i->al_handle;
  in.pnp_class = abi::PnpClass::PORT;
  in.context = reinterpret_cast<uint64_t>(i);
  abi::RegisterPnpOut out{};
  const Status status = kernel::CallRegisterPnpIrp(i->pdo, i->file, in, &out);
  if (status != Status::SUCCESS) return status;
  i->pnp_reg = out.reg.value;
  IssuePnpEvent(i);
  return Status::SUCCESS;
}

}  // namespace softib::ipoib
