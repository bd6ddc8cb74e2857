// Which nodes of a topology one softibd hosts when a fabric spans several daemons
// (--hosts NAME,... or --part I/N), and the names nodes and cables go by on the command
// line and the control socket.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "fabric/topology/topology.h"

namespace softib::softibd {

// A node by its NodeDescription ("host-0001 HCA-1"), the description's first word
// ("host-0001", the node's directory) or its node id ("H-0002c90300a00010"); nullopt with
// `error` when none matches or several do.
std::optional<fabric::NodeIndex> FindNode(const fabric::Topology& topology, const std::string& name,
                                          std::string* error);
// Per node, the shortest of those names that names the node alone.
std::vector<std::string> NodeNames(const fabric::Topology& topology);

// Per node: hosted here. `hosts`: comma-separated names (FindNode). `part` "I/N": the
// switches in node order cut into N runs, run I (1-based) hosted here, and every CA with
// the switch its first cabled port leads to (a CA cabled to no switch: by its own order
// among such CAs). Both empty: every node. False with `error` on a bad name or part.
bool SelectHosted(const fabric::Topology& topology, const std::string& hosts,
                  const std::string& part, std::vector<bool>* hosted, std::string* error);

}  // namespace softib::softibd
