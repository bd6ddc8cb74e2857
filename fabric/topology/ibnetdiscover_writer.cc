#include "fabric/topology/ibnetdiscover_writer.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace softib::fabric {
namespace {

// Appends printf-formatted text; every line we write is far below the buffer size
// (ibsim reads lines of at most 255 characters, and ours stay under 200).
__attribute__((format(printf, 2, 3))) void Append(std::string& out, const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  const int n = std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  if (n > 0) out.append(buf, std::min(static_cast<std::size_t>(n), sizeof buf - 1));
}

// The LID ibnetdiscover prints for the far end: the switch's port-0 LID, or the CA port's.
uint16_t LidOf(const Node& node, uint8_t port) { return node.AddressOf(port).lid; }

std::string Rate(const Link& link) {
  return std::string(ToString(link.width)) + std::string(ToString(link.speed));
}

void WriteIds(std::string& out, const Node& n) {
  Append(out, "\nvendid=0x%x\ndevid=0x%x\nsysimgguid=0x%" PRIx64 "\n", n.vendor_id, n.device_id,
         n.system_image_guid);
}

void WritePort(std::string& out, const Topology& t, const Node& n, uint8_t port) {
  const Link* link = t.LinkAt({static_cast<NodeIndex>(&n - t.nodes().data()), port});
  if (link == nullptr) return;
  const PortRef here{static_cast<NodeIndex>(&n - t.nodes().data()), port};
  const PortRef far = link->a == here ? link->b : link->a;
  const Node& peer = t.node(far.node);
  const std::string rate = Rate(*link);
  Append(out, "[%u]", unsigned{port});
  if (!n.is_switch()) Append(out, "(%" PRIx64 ") ", n.ports[port].guid);
  Append(out, "\t\"%s\"[%u]", peer.name.c_str(), unsigned{far.port});
  if (!peer.is_switch()) Append(out, "(%" PRIx64 ") ", peer.ports[far.port].guid);
  out += "\t\t# ";
  if (!n.is_switch())
    Append(out, "lid %u lmc %u ", unsigned{n.ports[port].lid}, unsigned{n.ports[port].lmc});
  Append(out, "\"%s\" lid %u %s\n", peer.description.c_str(), unsigned{LidOf(peer, far.port)},
         rate.c_str());
}

void WriteNode(std::string& out, const Topology& t, const Node& n) {
  WriteIds(out, n);
  if (n.is_switch()) {
    Append(out, "switchguid=0x%" PRIx64 "(%" PRIx64 ")\n", n.guid, n.ports[0].guid);
    Append(out, "Switch\t%u \"%s\"\t\t# \"%s\" %s port 0 lid %u lmc %u\n", unsigned{n.num_ports},
           n.name.c_str(), n.description.c_str(), n.enhanced_port0 ? "enhanced" : "base",
           unsigned{n.ports[0].lid}, unsigned{n.ports[0].lmc});
  } else {
    const bool router = n.type == NodeType::kRouter;
    Append(out, "%sguid=0x%" PRIx64 "\n", router ? "rt" : "ca", n.guid);
    Append(out, "%s\t%u \"%s\"\t\t# \"%s\"\n", router ? "Rt" : "Ca", unsigned{n.num_ports},
           n.name.c_str(), n.description.c_str());
  }
  for (unsigned p = 1; p <= n.num_ports; ++p) WritePort(out, t, n, static_cast<uint8_t>(p));
}

WriteResult WriteValidated(const Topology& t) {
  WriteResult r;
  r.text.reserve(t.nodes().size() * 160 + t.links().size() * 2 * 110);
  Append(r.text,
         "#\n# Topology file: written by softib (ibnetdiscover format)\n#\n"
         "# %zu switches, %zu CAs, %zu routers, %zu links\n",
         t.Count(NodeType::kSwitch), t.Count(NodeType::kCa), t.Count(NodeType::kRouter),
         t.links().size());
  for (const Node& n : t.nodes()) WriteNode(r.text, t, n);
  return r;
}

}  // namespace

WriteResult WriteIbnetdiscover(const Topology& topology) {
  if (topology.validated()) return WriteValidated(topology);
  Topology copy = topology;
  if (std::string e = copy.Validate(); !e.empty()) return {"", e};
  return WriteValidated(copy);
}

std::string WriteIbnetdiscoverFile(const Topology& topology, const std::string& path) {
  const WriteResult r = WriteIbnetdiscover(topology);
  if (!r.ok()) return path + ": " + r.error;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return path + ": cannot create: " + std::strerror(errno);
  out.write(r.text.data(), static_cast<std::streamsize>(r.text.size()));
  out.close();
  if (!out) return path + ": write error";
  return "";
}

}  // namespace softib::fabric
