// Topology generators: 2- and 3-level fat trees, a 2-D torus, and named presets (the small
// embedded default, the 36/576 and 92/1920 benchmark fabrics, a 13,284-node fat tree).
// Everything is deterministic: the same shape always gives the same GUIDs, node ids and
// descriptions ("spine-01", "leaf-03", "host-0017 HCA-1"), so files and bring-up runs can
// be compared across machines.
//
// GUIDs (Mellanox OUI 00:02:c9, as on the QDR-era hardware the defaults describe):
//   switch i (0-based, in node order)  0x0002c90200400000 + i + 1  (port 0 GUID = node GUID)
//   host h   (0-based)                 0x0002c90300a00000 + (h + 1) * 0x10; port p = GUID + p
// Node order: the top level first (spines / cores), then the lower switch levels, then the
// hosts; ibsim attaches clients without SIM_HOST to the first node's first port.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fabric/topology/topology.h"

namespace softib::fabric {

struct Hardware {
  unsigned radix = 36;     // switch ports
  unsigned hca_ports = 1;  // ports per HCA; port 1 is cabled, the others stay down
  LinkWidth width = LinkWidth::k4x;
  LinkSpeed speed = LinkSpeed::kQdr;
};

// levels 2: `leaves` leaf switches with `hosts_per_leaf` HCAs each; every leaf has
//   `uplinks` parallel links to every one of the `spines` spines.
//   Leaf ports: 1..H hosts, then H+1.. uplinks spine by spine. Spine port l*U+u+1: leaf l.
// levels 3: `pods` pods; each holds leaves/pods leaves and `aggs_per_pod` aggregation
//   switches, every leaf linked once to every aggregation switch of its pod. The `spines`
//   (core switches) form aggs_per_pod groups of spines/aggs_per_pod; aggregation switch j
//   of every pod links once to every core of group j (the k-ary fat tree wiring).
struct FatTreeShape {
  unsigned levels = 2;
  unsigned leaves = 2;
  unsigned hosts_per_leaf = 2;
  unsigned spines = 1;
  unsigned uplinks = 1;       // levels 2 only
  unsigned pods = 1;          // levels 3 only
  unsigned aggs_per_pod = 1;  // levels 3 only
  Hardware hardware;
};

// x * y switches, each with `hosts_per_switch` HCAs on ports 1..H and links to its four
// neighbours with wraparound: +x on port H+1, -x on H+2, +y on H+3, -y on H+4. A
// dimension of size 1 has no links; size 2 gives two parallel links (both wraps).
struct TorusShape {
  unsigned x = 2;
  unsigned y = 2;
  unsigned hosts_per_switch = 1;
  Hardware hardware;
};

struct GenerateResult {
  std::optional<Topology> topology;  // validated
  std::string error;                 // why the shape is impossible
  bool ok() const { return topology.has_value(); }
};

GenerateResult GenerateFatTree(const FatTreeShape& shape);
GenerateResult GenerateTorus(const TorusShape& shape);

// The embedded default fabric: 1 spine and 2 leaves (36-port, 2 uplinks from each leaf),
// 2 hosts per leaf with dual-port HCAs (port 1 cabled), 4xQDR.
Topology DefaultTopology();

struct Preset {
  std::string_view name;
  std::string_view shape;  // one line, for --help and the README
};
const std::vector<Preset>& Presets();
// "default", "ft36", "ft92", "ft-k36"; nullopt for an unknown name.
std::optional<Topology> MakePreset(std::string_view name);

}  // namespace softib::fabric
