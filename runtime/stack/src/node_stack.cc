// Boots a node as a host loads it (the seeds' load order: HCA FDO → bus → IPoIB PDO / IOU
// FDO → IOC PDOs → ULP FDOs): the HCA driver and its CAs (cabled, links ACTIVE, LIDs
// assigned since there is no SM yet), then the Access Layer, then the bus driver, which
// enumerates each CA's IPoIB port PDOs and IOU PDO and forwards the verb IRPs that ULPs
// send to those PDOs to the AL device (so the AL is there first, as IBAL lives in
// WinOFED's bus driver); the bus and the AL both take the CAs in through their PnP
// interface arrivals. With NodeConfig::iou_driver, the bus's IOU driver attaches an FDO
// over each IOU PDO, a client of the AL by IRPs through that PDO, which enumerates the IOC
// PDOs from the AL's IOC PnP events. Shutdown runs the other way round: the bus (its IOU
// FDOs and IOC PDOs, and the ULPs over its PDOs, clients of the AL) goes before the AL.
#include "softib/stack/node_stack.h"

#include <cstdlib>
#include <mutex>

#include "softib/al/access_layer.h"
#include "softib/bus/bus_driver.h"
#include "softib/ci/ci.h"
#include "softib/hca/hca_driver.h"
#include "softib/kernel/node.h"

namespace softib::stack {

using kernel::Status;

struct NodeStack::State {
  std::unique_ptr<kernel::Node> node;
  hca::HcaDriver* hca = nullptr;
  bus::BusDriver* bus = nullptr;
  al::AccessLayer* al = nullptr;
  std::mutex mutex;           // cas, next_index
  std::vector<uint64_t> cas;  // host order, in creation order
  uint32_t next_index = 0;    // LIDs and derived GUIDs never repeat
};

namespace {

// A stable node GUID per (node, CA index): the Mellanox OUI, a 16-bit hash of the node name,
// the index (16 bits) and a zero low byte. The HCA gives port p the GUID node GUID + p, so the
// low byte is the CA's own (its ports: 1..254) and a CA's port GUIDs never equal another CA's
// node or port GUIDs. (With the index in the low bits, CA i's port 1 had CA i+1's node GUID,
// and a two-port CA's port 2 the next CA's port-1 GUID: the AL, which finds a port by its
// GUID, took one for the other.)
uint64_t DerivedGuid(const std::string& node_name, uint32_t index) {
  uint32_t hash = 2166136261u;
  for (const char c : node_name) hash = (hash ^ static_cast<uint8_t>(c)) * 16777619u;
  const uint32_t folded = (hash ^ (hash >> 16)) & 0xFFFF;
  return 0x0002C90000000000ull | (uint64_t{folded} << 24) | (uint64_t{index & 0xFFFF} << 8);
}

}  // namespace

std::unique_ptr<NodeStack> NodeStack::Boot(const NodeConfig& config, Status* status) {
  std::unique_ptr<NodeStack> stack(new NodeStack());
  stack->state_ = std::make_unique<State>();
  State& s = *stack->state_;
  kernel::NodeOptions options;
  options.name = config.name;
  s.node = std::make_unique<kernel::Node>(options);
  *status = hca::LoadHcaDriver(s.node.get(), &s.hca);
  if (*status != Status::SUCCESS) return nullptr;
  for (const CaConfig& ca : config.cas) {
    uint64_t guid = 0;
    *status = stack->AddCaToDriver(ca, config.name, &guid);
    if (*status != Status::SUCCESS) return nullptr;  // the destructor unwinds
  }
  if (config.cable_pairs) {
    for (std::size_t i = 0; i + 1 < s.cas.size(); i += 2) {
      *status = hca::HcaCablePorts(s.hca, s.cas[i], 1, s.cas[i + 1], 1);
      if (*status != Status::SUCCESS) return nullptr;
    }
  }
  *status = al::LoadAccessLayer(s.node.get(), &s.al);
  if (*status != Status::SUCCESS) return nullptr;
  bus::BusOptions bus_options;
  bus_options.verb_device = al::kAlDeviceName;
  bus_options.iou_driver = config.iou_driver;
  *status = bus::LoadBusDriver(s.node.get(), &s.bus, bus_options);
  if (*status != Status::SUCCESS) return nullptr;
  for (const uint64_t guid : s.cas) {
    *status = stack->WaitForCa(guid, true);
    if (*status != Status::SUCCESS) return nullptr;
  }
  return stack;
}

Status NodeStack::AddCaToDriver(const CaConfig& ca, const std::string& node_name, uint64_t* guid) {
  State& s = *state_;
  uint32_t index;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    index = s.next_index++;
  }
  hca::HcaConfig hca_config;
  hca_config.num_ports = ca.num_ports;
  if (!ca.description.empty()) hca_config.description = ca.description;
  hca_config.node_guid = ca.node_guid != 0 ? ca.node_guid : DerivedGuid(node_name, index);
  // SOFTIB_CI_PEND=1: the HCA driver's pend mode for whole test binaries (every CI IRP is
  // completed later from a DPC: no caller may assume inline completion).
  if (const char* pend = std::getenv("SOFTIB_CI_PEND");
      pend != nullptr && std::string(pend) == "1") {
    hca_config.pend_ci = true;
  }
  // LIDs: 1 + CA index for port 1 (then one per further port, spaced by 16 per CA).
  const auto first_lid = ca.sm_assigns_lids ? uint16_t{0}
                         : ca.first_lid != 0
                             ? ca.first_lid
                             : static_cast<uint16_t>(1 + index * (ca.num_ports > 1 ? 16 : 1));
  const Status status = hca::HcaAddCa(s.hca, hca_config, first_lid);
  if (status != Status::SUCCESS) return status;
  std::lock_guard<std::mutex> lock(s.mutex);
  s.cas.push_back(hca_config.node_guid);
  *guid = hca_config.node_guid;
  return Status::SUCCESS;
}

NodeStack::~NodeStack() {
  if (state_ == nullptr) return;
  State& s = *state_;
  if (s.bus != nullptr) bus::UnloadBusDriver(s.bus);
  if (s.al != nullptr) al::UnloadAccessLayer(s.al);
  if (s.hca != nullptr) hca::UnloadHcaDriver(s.hca);
  s.node.reset();
}

kernel::Node* NodeStack::node() { return state_->node.get(); }
al::AccessLayer* NodeStack::access_layer() { return state_->al; }
bus::BusDriver* NodeStack::bus() { return state_->bus; }

Status NodeStack::WaitForCa(uint64_t guid, bool present) {
  // Both listen to the same interface class, each on its own registration: wait for both.
  const Status status = bus::WaitForBusCa(state_->bus, guid, present);
  if (status != Status::SUCCESS) return status;
  return al::WaitForCa(state_->al, guid, present);
}

std::vector<uint64_t> NodeStack::ca_guids() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->cas;
}

std::string NodeStack::ca_device_name(uint64_t ca_guid) const { return ci::CaDeviceName(ca_guid); }

Status NodeStack::RemoveCa(uint64_t ca_guid) {
  State& s = *state_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (std::erase(s.cas, ca_guid) == 0) return Status::INVALID_GUID;
  }
  const Status status = hca::HcaRemoveCa(s.hca, ca_guid);
  if (status != Status::SUCCESS) return status;
  return WaitForCa(ca_guid, false);
}

Status NodeStack::CablePorts(uint64_t guid_a, uint8_t port_a, uint64_t guid_b, uint8_t port_b) {
  return hca::HcaCablePorts(state_->hca, guid_a, port_a, guid_b, port_b);
}

Status NodeStack::LocalMad(uint64_t guid, uint8_t port, std::span<const uint8_t, 256> request,
                           std::span<uint8_t, 256> response) {
  return hca::HcaLocalMad(state_->hca, guid, port, request, response);
}

Status NodeStack::PlugExternal(uint64_t guid, uint8_t port, hca::Link* out,
                               std::shared_ptr<hca::Link>* inbound) {
  return hca::HcaPlugExternal(state_->hca, guid, port, out, inbound);
}

Status NodeStack::SetExternalLinkUp(uint64_t guid, uint8_t port, bool up) {
  return hca::HcaSetExternalLinkUp(state_->hca, guid, port, up);
}

Status NodeStack::UncablePort(uint64_t guid, uint8_t port) {
  return hca::HcaUncablePort(state_->hca, guid, port);
}

Status NodeStack::AddCa(const CaConfig& config, uint64_t* ca_guid) {
  State& s = *state_;
  Status status = AddCaToDriver(config, s.node->name(), ca_guid);
  if (status != Status::SUCCESS) return status;
  return WaitForCa(*ca_guid, true);
}

}  // namespace softib::stack
