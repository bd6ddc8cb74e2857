#include "fabric/topology/generators.h"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace softib::fabric {
namespace {

constexpr uint64_t kSwitchGuidBase = 0x0002c90200400000ULL;
constexpr uint64_t kHostGuidBase = 0x0002c90300a00000ULL;
constexpr uint64_t kHostGuidStride = 0x10;  // room for 15 port GUIDs per HCA
constexpr uint32_t kMellanox = 0x0002c9;
constexpr uint16_t kInfiniScaleIv = 0xbd36;  // 36-port QDR switch ASIC
constexpr uint16_t kConnectX2 = 0x673c;      // QDR HCA

unsigned Digits(unsigned count) {
  unsigned d = 1;
  for (unsigned v = count; v >= 10; v /= 10) ++d;
  return d;
}

// "leaf-03": 1-based, at least `min_width` digits, wider when the count needs it.
std::string Numbered(const char* stem, unsigned index, unsigned count, unsigned min_width) {
  const unsigned width = std::max(min_width, Digits(count));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%0*u", stem, static_cast<int>(width), index + 1);
  return buf;
}

// Builds nodes and links in order and checks the shape's port budget as it goes.
class Builder {
 public:
  explicit Builder(const Hardware& hw) : hw_(hw) {}

  NodeIndex AddSwitch(std::string description) {
    const uint64_t guid = kSwitchGuidBase + ++switches_;
    Node n = MakeNode(NodeType::kSwitch, CanonicalName(NodeType::kSwitch, guid),
                      std::move(description), guid, static_cast<uint8_t>(hw_.radix));
    n.vendor_id = kMellanox;
    n.device_id = kInfiniScaleIv;
    n.enhanced_port0 = false;
    return topology_.AddNode(std::move(n));
  }

  NodeIndex AddHost(unsigned host, unsigned total_hosts) {
    const uint64_t guid = kHostGuidBase + (uint64_t{host} + 1) * kHostGuidStride;
    Node n = MakeNode(NodeType::kCa, CanonicalName(NodeType::kCa, guid),
                      Numbered("host", host, total_hosts, 4) + " HCA-1", guid,
                      static_cast<uint8_t>(hw_.hca_ports));
    n.vendor_id = kMellanox;
    n.device_id = kConnectX2;
    return topology_.AddNode(std::move(n));
  }

  void Cable(NodeIndex a, unsigned port_a, NodeIndex b, unsigned port_b) {
    topology_.AddLink({{a, static_cast<uint8_t>(port_a)},
                       {b, static_cast<uint8_t>(port_b)},
                       hw_.width,
                       hw_.speed});
  }

  GenerateResult Finish() {
    GenerateResult r;
    if (std::string e = topology_.Validate(); !e.empty()) {
      r.error = "generated topology is invalid: " + e;  // a generator bug, not a user error
      return r;
    }
    r.topology = std::move(topology_);
    return r;
  }

 private:
  Hardware hw_;
  Topology topology_;
  uint64_t switches_ = 0;
};

std::string CheckHardware(const Hardware& hw) {
  if (hw.radix < 1 || hw.radix > kMaxPorts) return "radix must be 1..254";
  if (hw.hca_ports < 1 || hw.hca_ports > kHostGuidStride - 1) return "HCA ports must be 1..15";
  return "";
}

GenerateResult Error(std::string message) {
  GenerateResult r;
  r.error = std::move(message);
  return r;
}

std::string Needs(const char* what, unsigned used, unsigned radix) {
  return std::string(what) + " needs " + std::to_string(used) + " ports but switches have " +
         std::to_string(radix);
}

constexpr unsigned kMaxHosts = 1u << 20;

GenerateResult TwoLevel(const FatTreeShape& s) {
  const unsigned radix = s.hardware.radix;
  if (s.leaves == 0) return Error("a fat tree needs at least 1 leaf");
  if (s.spines == 0 && s.leaves > 1) return Error("more than 1 leaf needs at least 1 spine");
  if (s.spines > 0 && s.uplinks == 0) return Error("uplinks must be at least 1");
  const uint64_t leaf_ports = uint64_t{s.hosts_per_leaf} + uint64_t{s.spines} * s.uplinks;
  if (leaf_ports > radix)
    return Error(
        Needs("a leaf", static_cast<unsigned>(std::min<uint64_t>(leaf_ports, ~0u)), radix));
  if (s.spines > 0 && uint64_t{s.leaves} * s.uplinks > radix)
    return Error(Needs("a spine", s.leaves * s.uplinks, radix));
  const unsigned hosts = s.leaves * s.hosts_per_leaf;

  Builder b(s.hardware);
  std::vector<NodeIndex> spine(s.spines), leaf(s.leaves);
  for (unsigned i = 0; i < s.spines; ++i) spine[i] = b.AddSwitch(Numbered("spine", i, s.spines, 2));
  for (unsigned i = 0; i < s.leaves; ++i) leaf[i] = b.AddSwitch(Numbered("leaf", i, s.leaves, 2));
  for (unsigned l = 0; l < s.leaves; ++l)
    for (unsigned h = 0; h < s.hosts_per_leaf; ++h)
      b.Cable(leaf[l], h + 1, b.AddHost(l * s.hosts_per_leaf + h, hosts), 1);
  for (unsigned l = 0; l < s.leaves; ++l)
    for (unsigned sp = 0; sp < s.spines; ++sp)
      for (unsigned u = 0; u < s.uplinks; ++u)
        b.Cable(leaf[l], s.hosts_per_leaf + sp * s.uplinks + u + 1, spine[sp],
                l * s.uplinks + u + 1);
  return b.Finish();
}

GenerateResult ThreeLevel(const FatTreeShape& s) {
  const unsigned radix = s.hardware.radix;
  if (s.pods == 0 || s.leaves == 0 || s.aggs_per_pod == 0 || s.spines == 0)
    return Error("a 3-level fat tree needs pods, leaves, aggregation switches and spines");
  if (s.leaves % s.pods != 0)
    return Error("leaves (" + std::to_string(s.leaves) + ") must divide evenly into " +
                 std::to_string(s.pods) + " pods");
  if (s.spines % s.aggs_per_pod != 0)
    return Error("spines (" + std::to_string(s.spines) + ") must divide evenly into " +
                 std::to_string(s.aggs_per_pod) + " groups, one per aggregation switch of a pod");
  const unsigned per_pod = s.leaves / s.pods;
  const unsigned group = s.spines / s.aggs_per_pod;
  if (uint64_t{s.hosts_per_leaf} + s.aggs_per_pod > radix)
    return Error(Needs("a leaf", s.hosts_per_leaf + s.aggs_per_pod, radix));
  if (uint64_t{per_pod} + group > radix)
    return Error(Needs("an aggregation switch", per_pod + group, radix));
  if (s.pods > radix) return Error(Needs("a spine", s.pods, radix));
  const unsigned aggs = s.pods * s.aggs_per_pod;
  const unsigned hosts = s.leaves * s.hosts_per_leaf;

  Builder b(s.hardware);
  std::vector<NodeIndex> core(s.spines), agg(aggs), leaf(s.leaves);
  for (unsigned i = 0; i < s.spines; ++i) core[i] = b.AddSwitch(Numbered("spine", i, s.spines, 2));
  for (unsigned i = 0; i < aggs; ++i) agg[i] = b.AddSwitch(Numbered("agg", i, aggs, 2));
  for (unsigned i = 0; i < s.leaves; ++i) leaf[i] = b.AddSwitch(Numbered("leaf", i, s.leaves, 2));
  for (unsigned l = 0; l < s.leaves; ++l)
    for (unsigned h = 0; h < s.hosts_per_leaf; ++h)
      b.Cable(leaf[l], h + 1, b.AddHost(l * s.hosts_per_leaf + h, hosts), 1);
  for (unsigned p = 0; p < s.pods; ++p) {
    for (unsigned j = 0; j < s.aggs_per_pod; ++j) {
      const NodeIndex a = agg[p * s.aggs_per_pod + j];
      for (unsigned k = 0; k < per_pod; ++k)
        b.Cable(leaf[p * per_pod + k], s.hosts_per_leaf + j + 1, a, k + 1);
      for (unsigned c = 0; c < group; ++c) b.Cable(a, per_pod + c + 1, core[j * group + c], p + 1);
    }
  }
  return b.Finish();
}

}  // namespace

GenerateResult GenerateFatTree(const FatTreeShape& shape) {
  if (std::string e = CheckHardware(shape.hardware); !e.empty()) return Error(e);
  if (uint64_t{shape.leaves} * shape.hosts_per_leaf > kMaxHosts)
    return Error("more than " + std::to_string(kMaxHosts) + " hosts");
  if (shape.levels == 2) return TwoLevel(shape);
  if (shape.levels == 3) return ThreeLevel(shape);
  return Error("levels must be 2 or 3");
}

GenerateResult GenerateTorus(const TorusShape& s) {
  if (std::string e = CheckHardware(s.hardware); !e.empty()) return Error(e);
  if (s.x == 0 || s.y == 0) return Error("torus dimensions must be at least 1");
  if (uint64_t{s.x} * s.y > 65536) return Error("more than 65536 torus switches");
  if (uint64_t{s.x} * s.y * s.hosts_per_switch > kMaxHosts)
    return Error("more than " + std::to_string(kMaxHosts) + " hosts");
  const unsigned h = s.hosts_per_switch;
  const uint64_t used = uint64_t{h} + (s.x > 1 ? 2 : 0) + (s.y > 1 ? 2 : 0);
  if (used > s.hardware.radix)
    return Error(Needs("a torus switch", static_cast<unsigned>(used), s.hardware.radix));
  if (h + 4 > kMaxPorts) return Error("too many hosts per switch");

  Builder b(s.hardware);
  std::vector<NodeIndex> sw(std::size_t{s.x} * s.y);
  const unsigned wx = std::max(2u, Digits(s.x - 1)), wy = std::max(2u, Digits(s.y - 1));
  for (unsigned y = 0; y < s.y; ++y)
    for (unsigned x = 0; x < s.x; ++x) {
      char desc[64];
      std::snprintf(desc, sizeof desc, "torus-x%0*u-y%0*u", static_cast<int>(wx), x,
                    static_cast<int>(wy), y);
      sw[std::size_t{y} * s.x + x] = b.AddSwitch(desc);
    }
  const unsigned hosts = s.x * s.y * h;
  for (unsigned i = 0; i < s.x * s.y; ++i)
    for (unsigned k = 0; k < h; ++k) b.Cable(sw[i], k + 1, b.AddHost(i * h + k, hosts), 1);
  for (unsigned y = 0; y < s.y; ++y)
    for (unsigned x = 0; x < s.x; ++x) {
      const NodeIndex here = sw[std::size_t{y} * s.x + x];
      if (s.x > 1) b.Cable(here, h + 1, sw[std::size_t{y} * s.x + (x + 1) % s.x], h + 2);
      if (s.y > 1) b.Cable(here, h + 3, sw[std::size_t{(y + 1) % s.y} * s.x + x], h + 4);
    }
  return b.Finish();
}

Topology DefaultTopology() {
  FatTreeShape s;
  s.levels = 2;
  s.leaves = 2;
  s.hosts_per_leaf = 2;
  s.spines = 1;
  s.uplinks = 2;
  s.hardware.hca_ports = 2;
  return std::move(*GenerateFatTree(s).topology);
}

const std::vector<Preset>& Presets() {
  static const std::vector<Preset> presets = {
      {"default",
       "2-level fat tree: 1 spine, 2 leaves (2 uplinks each), 2 hosts per leaf with "
       "dual-port HCAs; 3 switches + 4 HCAs"},
      {"ft36",
       "2-level fat tree of 36-port switches: 12 spines, 24 leaves x 24 hosts, 1 uplink "
       "per leaf per spine; 36 switches + 576 HCAs"},
      {"ft92",
       "3-level fat tree of 36-port switches: 5 pods x (12 leaves x 32 hosts + 4 agg), "
       "12 spines in 4 groups; 92 switches + 1920 HCAs"},
      {"ft-k36",
       "3-level k=36 fat tree: 36 pods x (18 leaves x 18 hosts + 18 agg), 324 spines; "
       "1620 switches + 11664 HCAs = 13284 nodes"},
  };
  return presets;
}

std::optional<Topology> MakePreset(std::string_view name) {
  FatTreeShape s;
  if (name == "default") return DefaultTopology();
  if (name == "ft36") {
    s.levels = 2;
    s.spines = 12;
    s.leaves = 24;
    s.hosts_per_leaf = 24;
  } else if (name == "ft92") {
    s.levels = 3;
    s.pods = 5;
    s.leaves = 60;
    s.hosts_per_leaf = 32;
    s.aggs_per_pod = 4;
    s.spines = 12;
  } else if (name == "ft-k36") {
    s.levels = 3;
    s.pods = 36;
    s.leaves = 36 * 18;
    s.hosts_per_leaf = 18;
    s.aggs_per_pod = 18;
    s.spines = 324;
  } else {
    return std::nullopt;
  }
  GenerateResult r = GenerateFatTree(s);
  return std::move(r.topology);
}

}  // namespace softib::fabric
