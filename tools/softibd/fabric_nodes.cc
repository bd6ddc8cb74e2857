#include "fabric_nodes.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "fabric/topology/generators.h"
#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"
#include "fabric_part.h"
#include "options.h"
#include "softib/al/access_layer.h"
#include "softib/fabric/static_subnet.h"
#include "softib/mad/mad_sm.h"

namespace softib::softibd {

namespace {

bool Load(const std::string& spec, fabric::Topology* out, std::string* error) {
  if (spec == "default") {
    *out = fabric::DefaultTopology();
  } else if (auto preset = fabric::MakePreset(spec)) {
    *out = std::move(*preset);
  } else {
    fabric::ReadResult parsed = fabric::ReadIbnetdiscoverFile(spec);
    if (!parsed.ok()) {
      *error = "--fabric " + spec + " (not \"default\" or a preset): " + parsed.error;
      return false;
    }
    *out = std::move(*parsed.topology);
  }
  if (std::string problem = out->Validate(); !problem.empty()) {
    *error = "--fabric " + spec + ": " + problem;
    return false;
  }
  return true;
}

// "host-0017 HCA-1" -> "host-0017": the node's directory name; the node id otherwise.
std::string HostName(const fabric::Node& node) {
  std::string name;
  for (char c : node.description) {
    if (c == ' ') break;
    name +=
        std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  }
  return name.empty() || name == "." || name == ".." ? node.name : name;
}

// NodeInfo of a CA as its SMA reports it (IBA 14.2.5.3), for the ibsim clients' set-up.
std::array<uint8_t, 64> CaNodeInfo(const fabric::Node& node, uint8_t port) {
  mad::NodeInfo info;
  info.BaseVersion = 1;
  info.ClassVersion = 1;
  info.NodeType = static_cast<uint8_t>(node.type);
  info.NumPorts = node.num_ports;
  info.SystemImageGUID = node.system_image_guid != 0 ? node.system_image_guid : node.guid;
  info.NodeGUID = node.guid;
  info.PortGUID = node.guid + port;
  info.PartitionCap = 128;
  info.DeviceID = node.device_id;
  info.Revision = 0xA1;
  info.LocalPortNum = port;
  info.VendorID = node.vendor_id;
  std::array<uint8_t, 64> out{};
  info.Pack(out);
  return out;
}

// PortInfo of an active 4x QDR port with `lid` (IBA 14.2.5.6), until the HCA's SMA answers.
std::array<uint8_t, 64> ActivePortInfo(uint16_t lid, uint8_t port) {
  mad::PortInfo info;
  info.GIDPrefix = 0xFE80000000000000ull;
  info.LID = lid;
  info.CapabilityMask = 0x0250C048;
  info.LocalPortNum = port;
  info.LinkWidthEnabled = 2;
  info.LinkWidthSupported = 3;
  info.LinkWidthActive = 2;
  info.LinkSpeedSupported = 7;
  info.PortState = 4;
  info.PortPhysicalState = 5;
  info.LinkDownDefaultState = 2;
  info.LinkSpeedActive = 4;
  info.LinkSpeedEnabled = 7;
  info.NeighborMTU = 5;
  info.VLCap = 4;
  info.MTUCap = 5;
  info.OperationalVLs = 4;
  std::array<uint8_t, 64> out{};
  info.Pack(out);
  return out;
}

// The SMA/PMA of a host's CA ports (full node or light host): true when they answer.
using PortAgent = std::function<bool(uint8_t port, std::span<const uint8_t, 256> request,
                                     std::span<uint8_t, 256> response)>;
PortAgent AgentOf(const FabricNodes::HostNode* h) {
  if (h->light) {
    fabric::LightHost* light = h->light.get();
    return [light](uint8_t port, std::span<const uint8_t, 256> request,
                   std::span<uint8_t, 256> response) {
      return light->LocalMad(port, request, response);
    };
  }
  stack::NodeStack* stack = h->stack.get();
  const uint64_t guid = h->guid;
  return [stack, guid](uint8_t port, std::span<const uint8_t, 256> request,
                       std::span<uint8_t, 256> response) {
    return stack->LocalMad(guid, port, request, response) == kernel::Status::SUCCESS;
  };
}

// The HCA port behind FabricHost CA port `index` follows its cable: down now if the cable
// is (a tunnel cable waits for the far daemon's hellos), then through every flap.
void FollowCable(fabric::FabricHost& host, uint32_t index, fabric::FabricHost::LinkState set_up) {
  if (!host.ca_port_up(index)) set_up(false);
  host.SetLinkState(index, std::move(set_up));
}

}  // namespace

bool FabricNodes::Start(const std::string& spec, const std::string& run_dir, bool static_routes,
                        std::string* error) {
  if (!Load(spec, &topology_, error)) return false;
  if (!SelectHosted(topology_, split_.hosts, split_.part, &hosted_, error)) return false;
  host_ = std::make_unique<fabric::FabricHost>();
  const auto& nodes = topology_.nodes();
  // A host-side CA port for every cabled CA port, then the static subnet around them.
  std::map<std::pair<fabric::NodeIndex, uint8_t>, uint32_t> host_port;
  for (fabric::NodeIndex i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_switch() || !hosted_[i]) continue;
    for (uint8_t p = 1; p <= nodes[i].num_ports; ++p) {
      if (topology_.Peer({i, p})) host_port[{i, p}] = host_->AddCaPort();
    }
  }
  if (!tunnels_.Prepare(topology_, hosted_, *host_, split_.listen, split_.peers, error))
    return false;
  const fabric::SubnetPart part{hosted_, [&](std::size_t link) { return tunnels_.FarEnd(link); }};
  fabric::StaticSubnet subnet;
  const std::string built = host_->With([&](fabric::Fabric& f) {
    return fabric::BuildStaticSubnet(
        topology_, f,
        [&](fabric::NodeIndex node, uint8_t port, uint16_t) {
          return host_->fabric_port_locked(host_port.at({node, port}));
        },
        &subnet, static_routes, &part);
  });
  if (!built.empty()) {
    *error = "--fabric " + spec + ": " + built;
    return false;
  }
  if (!static_routes) {
    for (auto& lids : subnet.lid) std::fill(lids.begin(), lids.end(), 0);  // the SM's to give
  }
  for (fabric::NodeIndex i = 0; i < nodes.size(); ++i) {
    for (uint8_t p = 0; p < subnet.lid[i].size(); ++p)
      topology_.mutable_node(i).ports[p].lid = subnet.lid[i][p];
  }
  for (const auto& [where, index] : host_port)
    ca_ports_.push_back({where.first, where.second, index, subnet.lid[where.first][where.second]});
  (void)topology_.Validate();
  tunnels_.Attach(subnet, static_routes);
  commands_ = std::make_unique<FabricCommands>(topology_, subnet.cable, hosted_, *host_, tunnels_,
                                               static_routes);

  // One node (or light host) per CA, its ports plugged into the fabric.
  const std::size_t cas = nodes.size() - num_switches();
  const bool light = light_ || cas > kAutoLightHosts;
  std::set<std::string> full(full_.begin(), full_.end());
  for (fabric::NodeIndex i = 0; i < nodes.size(); ++i) {
    const fabric::Node& node = nodes[i];
    if (node.is_switch() || !hosted_[i]) continue;
    HostNode h;
    h.name = HostName(node);
    h.guid = node.guid;
    h.lid = subnet.lid[i][1];
    h.node = i;
    const bool sm_host =
        want_sm_host_ && !sm_host_ && (sm_host_name_.empty() || sm_host_name_ == h.name);
    if ((light && full.erase(h.name) == 0) || sm_host) {
      StartLight(node, i, static_routes ? h.lid : 0, host_port, &h);
      if (sm_host) sm_host_ = h.light.get();
      hosts_.push_back(std::move(h));
      continue;
    }
    stack::NodeConfig config;
    config.name = h.name;
    h.ca.node_guid = node.guid;
    h.ca.num_ports = node.num_ports;
    h.ca.first_lid = subnet.lid[i][1];
    h.ca.description = node.description;  // what the port's SMA reports as NodeDescription
    h.ca.sm_assigns_lids = !static_routes;
    config.cas = {h.ca};
    config.cable_pairs = false;
    kernel::Status status = kernel::Status::SUCCESS;
    h.stack = stack::NodeStack::Boot(config, &status);
    if (!h.stack) {
      *error = "node " + h.name + " did not boot (status " +
               std::to_string(static_cast<uint32_t>(status)) + ")";
      return false;
    }
    for (uint8_t p = 1; p <= node.num_ports; ++p) {
      auto it = host_port.find({i, p});
      if (it == host_port.end()) continue;
      status = PlugPort(h, p, it->second);
      if (status != kernel::Status::SUCCESS) {
        *error = "node " + h.name + ": port " + std::to_string(p) + " not plugged (status " +
                 std::to_string(static_cast<uint32_t>(status)) + ")";
        return false;
      }
    }
    hosts_.push_back(std::move(h));
  }
  if (want_sm_host_ && !sm_host_) {
    *error = "--sm-host: no host " + sm_host_name_ + " in --fabric " + spec;
    return false;
  }
  if (light && !full.empty()) {
    *error = "--full-hosts: no host " + *full.begin() + " in --fabric " + spec;
    return false;
  }
  host_->Start();
  started_ = true;
  if (!StartControl(run_dir, error)) return false;

  for (const HostNode& h : hosts_) {
    if (!h.stack) continue;  // a light host serves nothing
    const std::string dir = run_dir + "/" + h.name;
    if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      *error = dir + ": " + std::strerror(errno);
      return false;
    }
    if (!servers_.Serve(h.stack->node(), dir, al::kAlDeviceName, error)) return false;
    for (uint64_t guid : h.stack->ca_guids()) {
      if (!servers_.Serve(h.stack->node(), dir, h.stack->ca_device_name(guid), error)) return false;
    }
  }
  return true;
}

kernel::Status FabricNodes::PlugPort(HostNode& h, uint8_t port, uint32_t index) {
  std::shared_ptr<hca::Link> inbound;
  const kernel::Status status =
      h.stack->PlugExternal(h.guid, port, &host_->ca_link(index), &inbound);
  if (status != kernel::Status::SUCCESS) return status;
  host_->SetInbound(index, std::move(inbound));
  FollowCable(*host_, index, [stack = h.stack.get(), guid = h.guid, port](bool up) {
    (void)stack->SetExternalLinkUp(guid, port, up);
  });
  if (std::find(h.plugged.begin(), h.plugged.end(), std::make_pair(port, index)) == h.plugged.end())
    h.plugged.emplace_back(port, index);
  return kernel::Status::SUCCESS;
}

void FabricNodes::StartLight(
    const fabric::Node& node, fabric::NodeIndex index, uint16_t first_lid,
    const std::map<std::pair<fabric::NodeIndex, uint8_t>, uint32_t>& host_port, HostNode* h) {
  // The HcaConfig a full node's CA gets (stack::NodeStack), so both answer alike.
  hca::HcaConfig config;
  config.num_ports = node.num_ports;
  config.node_guid = node.guid;
  if (!node.description.empty()) config.description = node.description;
  h->light = std::make_unique<fabric::LightHost>(config, first_lid);
  for (uint8_t p = 1; p <= node.num_ports; ++p) {
    auto it = host_port.find({index, p});
    if (it == host_port.end()) continue;
    h->light->Plug(p, &host_->ca_link(it->second));
    host_->SetInbound(it->second, h->light->Inbound(p));
    FollowCable(*host_, it->second,
                [light = h->light.get(), p](bool up) { (void)light->SetLinkUp(p, up); });
  }
}

std::size_t FabricNodes::num_light_hosts() const {
  std::size_t n = 0;
  for (const HostNode& h : hosts_) n += h.light ? 1 : 0;
  return n;
}

bool FabricNodes::ServeIbsim(const std::string& base_name, std::string* error) {
  std::vector<fabric::ibsim::AttachPort> ports;
  std::unordered_map<uint64_t, const HostNode*> owners;
  for (const HostNode& h : hosts_) owners[h.guid] = &h;
  for (const CaPortRef& ref : ca_ports_) {
    const fabric::Node& node = topology_.node(ref.node);
    fabric::ibsim::AttachPort a;
    a.nodeid = node.name;
    a.description = node.description;
    a.port_num = ref.port;
    a.num_ports = node.num_ports;
    a.node_info = CaNodeInfo(node, ref.port);
    const uint16_t lid = ref.lid;
    a.lid = [lid] { return lid; };
    a.port_info = [lid](uint8_t port) { return ActivePortInfo(lid, port); };
    fabric::FabricHost* host = host_.get();
    const uint32_t index = ref.host_port;
    a.transmit = [host, index](std::vector<uint8_t> packet) {
      (void)host->ca_link(index).Transmit(std::move(packet));
    };
    const uint8_t port_num = ref.port;
    if (const auto agent = AgentOf(owners.at(node.guid))) {
      a.local_mad = [agent, port_num](
                        std::span<const uint8_t> mad) -> std::optional<std::array<uint8_t, 256>> {
        if (mad.size() != 256) return std::nullopt;
        std::array<uint8_t, 256> response{};
        if (!agent(port_num, mad.first<256>(), response)) return std::nullopt;
        return response;
      };
      // PortInfo from the port's own SMA, as ibsim reads it from its node.
      a.port_info = [agent, lid](uint8_t port) {
        std::array<uint8_t, 256> request{}, response{};
        request[0] = 1, request[1] = 0x01, request[2] = 1, request[3] = 0x01;  // SubnGet
        request[16] = 0x00, request[17] = 0x15;                                // PortInfo
        request[23] = port;
        if (!agent(port, request, response)) return ActivePortInfo(lid, port);
        std::array<uint8_t, 64> info{};
        std::copy_n(response.begin() + 64, 64, info.begin());
        return info;
      };
      // The LID an SM may have given the port since (PortInfo LID at byte 16).
      a.lid = [port_info = a.port_info, port_num] {
        const auto info = port_info(port_num);
        return static_cast<uint16_t>(info[16] << 8 | info[17]);
      };
    }
    ports.push_back(std::move(a));
  }
  ibsim_ = std::make_unique<fabric::ibsim::SimServer>(base_name, std::move(ports));
  if (!ibsim_->Start(error)) return false;
  for (uint32_t i = 0; i < ca_ports_.size(); ++i) {
    fabric::ibsim::SimServer* server = ibsim_.get();
    host_->SetTap(ca_ports_[i].host_port, [server, i](std::span<const uint8_t> packet) {
      return server->Deliver(i, packet);
    });
  }
  return true;
}

void FabricNodes::Stop() {
  control_.Stop();
  servers_.Stop();
  if (ibsim_) ibsim_->Stop();
  if (host_) host_->Stop();
  hosts_.clear();  // the nodes unload; their ports' inbound links are cut
  commands_.reset();
  host_.reset();
  ibsim_.reset();
}

std::string FabricNodes::Describe() const {
  fabric::WriteResult written = fabric::WriteIbnetdiscover(topology_);
  return written.ok() ? written.text : "(" + written.error + ")\n";
}

std::size_t FabricNodes::num_switches() const {
  std::size_t n = 0;
  for (fabric::NodeIndex i = 0; i < topology_.nodes().size(); ++i)
    n += topology_.node(i).is_switch() && hosted_[i];
  return n;
}

}  // namespace softib::softibd
