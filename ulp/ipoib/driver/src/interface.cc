// An interface's set-up and teardown. CreateInterface (PASSIVE) opens the AL for the
// driver's FDO and issues its set-up verbs as IRPs to the PDO, waiting for each: the CA,
// a PD, ONE registration covering every send and receive buffer (nothing is registered in
// the speed path), one CQ, the UD QP (P_Key index of the configured partition, the default
// Q_Key until the broadcast group answers) brought to RTS with its receive ring posted;
// then the CQ's event loop, the port's PnP events and the broadcast group's join start, and
// the carrier comes up when that join is answered (multicast.cc).
#include <endian.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "internal.h"
#include "kernel/verbs_ca_direct.h"
#include "kernel/verbs_cq_direct.h"
#include "kernel/verbs_mr_mw_direct.h"
#include "kernel/verbs_pd_av_direct.h"
#include "kernel/verbs_qp_direct.h"
#include "softib/al/access_layer.h"
#include "softib/kernel/io.h"

namespace softib::ipoib {

using kernel::Status;

uint32_t MtuBytes(abi::PathMtu mtu) {
  const auto code = static_cast<uint8_t>(mtu);
  return code >= 1 && code <= 5 ? 128u << code : 0;
}

void SetCarrier(Interface* i, bool up) {
  uint32_t new_mtu = 0;
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->carrier == up || (up && i->stopping)) return;
    i->carrier = up;
    if (!up) IbatForgetLocked(i);
    if (up && i->face_mtu != i->local.mtu) new_mtu = i->face_mtu = i->local.mtu;
  }
  if (new_mtu != 0) i->face->SetMtu(new_mtu);
  i->face->SetCarrier(up);
}

namespace {

// The P_Key's index in the port's table (SubnGet(P_KeyTable) block 0 from the port's SMA).
Status FindPkeyIndex(Interface* i, uint16_t pkey, uint16_t* index) {
  abi::LocalMadIn in{};
  in.ca.value = i->ca;
  in.port_num = i->port->port;
  in.request[0] = 1;     // BaseVersion
  in.request[1] = 0x01;  // SubnMgt, LID-routed
  in.request[2] = 1;
  in.request[3] = 0x01;   // Get
  in.request[17] = 0x16;  // P_KeyTable, block 0
  abi::LocalMadOut out{};
  const Status status = kernel::CallLocalMadIrp(i->pdo, i->file, in, &out);
  if (status != Status::SUCCESS) return status;
  for (uint16_t n = 0; n < 32; ++n) {
    const uint16_t entry =
        static_cast<uint16_t>(out.response[64 + 2 * n] << 8 | out.response[64 + 2 * n + 1]);
    if ((entry & 0x7FFF) == (pkey & 0x7FFF) && (entry & 0x7FFF) != 0) {
      *index = n;
      return Status::SUCCESS;
    }
  }
  return Status::INVALID_PKEY;
}

Status ModifyQp(Interface* i, const abi::QpModifyAttributes& attributes) {
  abi::ModifyQpIn in{};
  in.qp.value = i->qp;
  in.attributes = attributes;
  return kernel::CallModifyQpIrp(i->pdo, i->file, in);
}

Status SetUp(Interface* i) {
  Status status = kernel::IbOpenAl(i->node, i->port->fdo, &i->al);
  if (status != Status::SUCCESS) return status;
  i->file = kernel::IbGetAlFile(i->al);
  i->al_handle = kernel::IbGetAlHandle(i->al);

  abi::OpenCaOut ca{};
  status =
      kernel::CallOpenCaIrp(i->pdo, i->file, {{i->al_handle}, htobe64(i->port->ca_guid), 0}, &ca);
  if (status != Status::SUCCESS) return status;
  i->ca = ca.ca.value;

  std::vector<uint8_t> query(sizeof(abi::QueryCaOut) + 8 * sizeof(abi::PortAttributes));
  status = kernel::CallQueryCaIrp(i->pdo, i->file, {{i->ca}}, query.data(),
                                  static_cast<uint32_t>(query.size()));
  if (status != Status::SUCCESS) return status;
  abi::QueryCaOut ca_out{};
  std::memcpy(&ca_out, query.data(), sizeof ca_out);
  if (i->port->port == 0 || i->port->port > ca_out.num_ports) return Status::INVALID_PORT;
  abi::PortAttributes port{};
  std::memcpy(
      &port,
      query.data() + sizeof(abi::QueryCaOut) + (i->port->port - 1) * sizeof(abi::PortAttributes),
      sizeof port);

  if (i->config.pkey != 0xFFFF) {
    status = FindPkeyIndex(i, i->config.pkey, &i->pkey_index);
    if (status != Status::SUCCESS) return status;
  }

  abi::AllocPdOut pd{};
  status = kernel::CallAllocPdIrp(i->pdo, i->file, {{i->ca}, abi::PdType{}, 0, 0}, &pd);
  if (status != Status::SUCCESS) return status;
  i->pd = pd.pd.value;

  // One registration over every buffer.
  const size_t ud_bytes = static_cast<size_t>(kRxSlots + kTxSlots) * kSlotBytes;
  i->memory.assign(ud_bytes + CmMemoryBytes(i), 0);
  i->rx_base = i->memory.data();
  i->tx_base = i->memory.data() + static_cast<size_t>(kRxSlots) * kSlotBytes;
  abi::RegMemIn reg{};
  reg.pd = pd.pd;
  reg.region.vaddr = reinterpret_cast<uint64_t>(i->memory.data());
  reg.region.length = i->memory.size();
  reg.region.access = abi::AccessFlags::LOCAL_WRITE;
  abi::RegMemOut mr{};
  status = kernel::CallRegMemIrp(i->pdo, i->file, reg, &mr);
  if (status != Status::SUCCESS) return status;
  i->mr = mr.mr.value;
  i->lkey = mr.lkey;

  abi::CreateCqOut cq{};
  status = kernel::CallCreateCqIrp(
      i->pdo, i->file,
      {{i->ca},
       2 * (kRxSlots + kTxSlots) + (CmMemoryBytes(i) != 0 ? 4 * (kCmRxSlots + kCmTxSlots) : 0),
       0,
       reinterpret_cast<uint64_t>(i)},
      &cq);
  if (status != Status::SUCCESS) return status;
  i->cq = cq.cq.value;

  abi::CreateQpIn qp_in{};
  qp_in.pd = pd.pd;
  qp_in.send_cq = cq.cq;
  qp_in.recv_cq = cq.cq;
  qp_in.params.qp_type = abi::QpType::UD;
  qp_in.params.sq_signaled = 1;
  qp_in.params.caps = {kTxSlots, kRxSlots, 1, 1, 0, 0};
  qp_in.context = reinterpret_cast<uint64_t>(i);
  abi::CreateQpOut qp{};
  status = kernel::CallCreateQpIrp(i->pdo, i->file, qp_in, &qp);
  if (status != Status::SUCCESS) return status;
  i->qp = qp.qp.value;
  abi::QueryQpOut query_qp{};
  status = kernel::CallQueryQpIrp(i->pdo, i->file, {qp.qp}, &query_qp);
  if (status != Status::SUCCESS) return status;

  using M = abi::QpAttrMask;
  abi::QpModifyAttributes attributes{};
  attributes.mask = M::STATE | M::PKEY_INDEX | M::PORT | M::QKEY;
  attributes.state = abi::QpState::INIT;
  attributes.port_num = i->port->port;
  attributes.pkey_index = i->pkey_index;
  attributes.qkey = htobe32(kDefaultQkey);
  if ((status = ModifyQp(i, attributes)) != Status::SUCCESS) return status;
  for (uint32_t slot = 0; slot < kRxSlots; ++slot) PostReceiveSlot(i, slot);
  attributes = {};
  attributes.mask = M::STATE;
  attributes.state = abi::QpState::RTR;
  if ((status = ModifyQp(i, attributes)) != Status::SUCCESS) return status;
  attributes.mask = M::STATE | M::SQ_PSN;
  attributes.state = abi::QpState::RTS;
  attributes.sq_psn = 0;
  if ((status = ModifyQp(i, attributes)) != Status::SUCCESS) return status;

  {
    kernel::SpinLockGuard guard(i->lock);
    for (uint32_t slot = kTxSlots; slot > 0; --slot) i->tx_free.push_back(slot - 1);
    i->port_guid_be = port.port_guid;
    i->subnet_prefix_be = port.subnet_prefix;
    i->lid = port.lid;
    i->port_up = port.link_state == 4;
    i->ib_mtu = std::min<uint32_t>(MtuBytes(port.active_mtu), 4096);
    if (i->ib_mtu == 0) i->ib_mtu = 2048;
    i->local.hw.flags = CmMemoryBytes(i) != 0 ? HwAddr::kConnectedFlag : 0;
    i->local.hw.qpn = query_qp.attributes.qp_num;
    std::memcpy(i->local.hw.gid.data(), &port.subnet_prefix, 8);
    std::memcpy(i->local.hw.gid.data() + 8, &port.port_guid, 8);
    // The face's MAC: derived from the port GUID (the GID's interface ID) and the QPN as
    // every peer's neighbour table derives it (locally administered, unicast).
    i->local.mac = DeriveMac(i->local.hw);
    i->local.pkey = static_cast<uint16_t>(i->config.pkey | 0x8000);
    i->local.mcast_scope = 2;
    i->local.mtu = CmMemoryBytes(i) != 0 ? kCmMtu : i->ib_mtu - static_cast<uint32_t>(kEncapBytes);
    i->face_mtu = i->local.mtu;
  }
  if (CmMemoryBytes(i) != 0 &&
      (status = CmSetUp(i, i->memory.data() + ud_bytes)) != Status::SUCCESS)
    return status;
  StartReceive(i);
  if ((status = StartPortEvents(i)) != Status::SUCCESS) return status;
  StartAgeing(i);
  return Status::SUCCESS;
}

}  // namespace

Status CreateInterface(Driver* driver, const InterfaceConfig& config, EthernetFace* face,
                       Interface** out) {
  if (face == nullptr || out == nullptr || config.ports.empty()) return Status::INVALID_PARAMETER;
  if (config.ports.size() > 2) return Status::UNSUPPORTED;
  // LBFO teams two datagram-mode interfaces (connected mode over a team: not built).
  if (config.ports.size() == 2) {
    if (config.mode != Mode::kDatagram) return Status::UNSUPPORTED;
    return CreateLbfo(driver, config, face, out);
  }
  auto* i = new Interface;
  i->driver = driver;
  i->face = face;
  i->config = config;
  i->node = driver->node;
  {
    std::lock_guard guard(driver->mutex);
    for (PortFdo* port : driver->ports) {
      if ((config.ca_guid == 0 || port->ca_guid == config.ca_guid) &&
          port->port == config.ports[0] && !port->removed) {
        i->port = port;
        break;
      }
    }
    if (i->port != nullptr) driver->interfaces.push_back(i);
  }
  if (i->port == nullptr) {
    delete i;
    return Status::NOT_FOUND;
  }
  i->pdo = i->port->pdo;
  kernel::KeInitializeDpc(&i->cq_dpc, i->node, nullptr, nullptr);  // receive.cc sets it up
  const Status status = SetUp(i);
  if (status != Status::SUCCESS) {
    DestroyInterface(i);
    return status;
  }
  IbatAttach(i);
  Gid bcast{};
  {
    kernel::SpinLockGuard guard(i->lock);
    bcast = BroadcastMgid(i->local.pkey, i->local.mcast_scope);
  }
  JoinGroup(i, bcast, true, true);
  *out = i;
  return Status::SUCCESS;
}

// Lets go of the fabric: carrier down, every IRP cancelled or completed, the AL instance
// (and with it every object, join and registration) released. The Interface stays for
// the caller's DestroyInterface.
void ShutdownInterface(Interface* i) {
  {
    kernel::SpinLockGuard guard(i->lock);
    if (i->shut_down) return;
    i->shut_down = true;
    i->stopping = true;
    i->stop = true;
  }
  {
    bool was_up;
    {
      kernel::SpinLockGuard guard(i->lock);
      was_up = i->carrier;
      i->carrier = false;
    }
    if (was_up) i->face->SetCarrier(false);
  }
  StopAgeing(i);
  CmQuiesce(i);
  // Releasing the AL completes every IRP of the interface's file (CANCELED) and runs their
  // routines before it returns; the speed path is not called again (stopping).
  if (i->al != nullptr) kernel::IbReleaseAl(std::exchange(i->al, nullptr));
  while (i->outstanding.load() != 0) {
    kernel::KeResetEvent(&i->idle);
    if (i->outstanding.load() == 0) break;
    kernel::KeWaitForSingleObject(&i->idle, std::chrono::milliseconds(50));
  }
  kernel::KeFlushQueuedDpcs(i->node);
  CmShutdown(i);
  kernel::SpinLockGuard guard(i->lock);
  i->neighbours.Clear();
  i->paths.clear();
  i->groups.clear();
  i->ats.clear();
}

void DestroyInterface(Interface* i) {
  if (i->lbfo != nullptr) return DestroyLbfo(i);
  IbatDetach(i);
  ShutdownInterface(i);
  Driver* driver = i->driver;
  {
    std::lock_guard guard(driver->mutex);
    driver->interfaces.erase(std::remove(driver->interfaces.begin(), driver->interfaces.end(), i),
                             driver->interfaces.end());
  }
  delete i;
}

Mac InterfaceMac(Interface* i) {
  if (i->lbfo != nullptr) return LbfoMac(i);
  kernel::SpinLockGuard guard(i->lock);
  return i->local.mac;
}

uint32_t InterfaceMtu(Interface* i) {
  if (i->lbfo != nullptr) return LbfoMtu(i);
  kernel::SpinLockGuard guard(i->lock);
  return i->local.mtu;
}

Status Query(Interface* i, InterfaceInfo* info) {
  if (i->lbfo != nullptr) return LbfoQuery(i, info);
  kernel::SpinLockGuard guard(i->lock);
  info->name = i->config.name;
  info->mode = i->config.mode;
  info->mtu = i->local.mtu;
  info->local = i->local;
  info->lid = i->lid;
  info->active_port = i->port != nullptr ? i->port->port : 0;
  info->carrier = i->carrier;
  info->groups.clear();
  for (const auto& [mgid, group] : i->groups) {
    if (group.state != Group::State::kJoined) continue;
    info->groups.push_back({mgid, !group.full, group.mlid});
  }
  info->neighbours = i->neighbours.Snapshot();
  info->counters = i->counters;
  return i->shut_down ? Status::CA_REMOVED : Status::SUCCESS;
}

}  // namespace softib::ipoib
