#include "fabric_nodes.h"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>

#include "fabric/topology/generators.h"
#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"
#include "softib/al/access_layer.h"
#include "softib/fabric/static_subnet.h"

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

}  // namespace

bool FabricNodes::Start(const std::string& spec, const std::string& run_dir, std::string* error) {
  if (!Load(spec, &topology_, error)) return false;
  host_ = std::make_unique<fabric::FabricHost>();
  const auto& nodes = topology_.nodes();
  // A host-side CA port for every cabled CA port, then the static subnet around them.
  std::map<std::pair<fabric::NodeIndex, uint8_t>, uint32_t> host_port;
  for (fabric::NodeIndex i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_switch()) continue;
    for (uint8_t p = 1; p <= nodes[i].num_ports; ++p) {
      if (topology_.Peer({i, p})) host_port[{i, p}] = host_->AddCaPort();
    }
  }
  fabric::StaticSubnet subnet;
  const std::string built = host_->With([&](fabric::Fabric& f) {
    return fabric::BuildStaticSubnet(
        topology_, f,
        [&](fabric::NodeIndex node, uint8_t port, uint16_t) {
          return host_->fabric_port_locked(host_port.at({node, port}));
        },
        &subnet);
  });
  if (!built.empty()) {
    *error = "--fabric " + spec + ": " + built;
    return false;
  }
  for (fabric::NodeIndex i = 0; i < nodes.size(); ++i) {
    for (uint8_t p = 0; p < subnet.lid[i].size(); ++p)
      topology_.mutable_node(i).ports[p].lid = subnet.lid[i][p];
  }
  (void)topology_.Validate();

  // One node per CA, its ports plugged into the fabric.
  for (fabric::NodeIndex i = 0; i < nodes.size(); ++i) {
    const fabric::Node& node = nodes[i];
    if (node.is_switch()) continue;
    HostNode h;
    h.name = HostName(node);
    h.guid = node.guid;
    h.lid = subnet.lid[i][1];
    stack::NodeConfig config;
    config.name = h.name;
    config.cas = {stack::CaConfig{
        .node_guid = node.guid, .num_ports = node.num_ports, .first_lid = subnet.lid[i][1]}};
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
      std::shared_ptr<hca::Link> inbound;
      status = h.stack->PlugExternal(node.guid, p, &host_->ca_link(it->second), &inbound);
      if (status != kernel::Status::SUCCESS) {
        *error = "node " + h.name + ": port " + std::to_string(p) + " not plugged (status " +
                 std::to_string(static_cast<uint32_t>(status)) + ")";
        return false;
      }
      host_->SetInbound(it->second, std::move(inbound));
    }
    hosts_.push_back(std::move(h));
  }
  host_->Start();
  started_ = true;

  for (const HostNode& h : hosts_) {
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

void FabricNodes::Stop() {
  servers_.Stop();
  if (host_) host_->Stop();
  hosts_.clear();  // the nodes unload; their ports' inbound links are cut
  host_.reset();
}

std::string FabricNodes::Describe() const {
  fabric::WriteResult written = fabric::WriteIbnetdiscover(topology_);
  return written.ok() ? written.text : "(" + written.error + ")\n";
}

std::size_t FabricNodes::num_switches() const { return topology_.Count(fabric::NodeType::kSwitch); }

}  // namespace softib::softibd
