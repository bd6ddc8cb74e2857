#include "fabric_part.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <unordered_map>

namespace softib::softibd {

namespace {

std::string FirstWord(const std::string& text) { return text.substr(0, text.find(' ')); }

bool Names(const fabric::Node& node, const std::string& name) {
  return name == node.description || name == FirstWord(node.description) || name == node.name;
}

// "I/N" with 1 <= I <= N.
bool ParsePart(const std::string& part, unsigned* index, unsigned* count) {
  const std::size_t slash = part.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == part.size()) return false;
  char* end = nullptr;
  const unsigned long i = std::strtoul(part.c_str(), &end, 10);
  if (end != part.c_str() + slash) return false;
  const unsigned long n = std::strtoul(part.c_str() + slash + 1, &end, 10);
  if (*end != '\0' || part[0] == '-' || part[slash + 1] == '-' || i < 1 || n < 1 || i > n ||
      n > 100000)
    return false;
  *index = static_cast<unsigned>(i - 1);
  *count = static_cast<unsigned>(n);
  return true;
}

}  // namespace

std::optional<fabric::NodeIndex> FindNode(const fabric::Topology& topology, const std::string& name,
                                          std::string* error) {
  std::optional<fabric::NodeIndex> found;
  for (fabric::NodeIndex i = 0; i < topology.nodes().size(); ++i) {
    if (!Names(topology.node(i), name)) continue;
    if (found) {
      *error = "\"" + name + "\" names more than one node (" + topology.node(*found).name + ", " +
               topology.node(i).name + ")";
      return std::nullopt;
    }
    found = i;
  }
  if (!found) *error = "no node is named \"" + name + "\"";
  return found;
}

std::vector<std::string> NodeNames(const fabric::Topology& topology) {
  // How many nodes each name names (Names): counted once, not per node (13k-node fabrics).
  std::unordered_map<std::string, unsigned> named;
  for (const fabric::Node& n : topology.nodes()) {
    std::set<std::string> own = {n.description, FirstWord(n.description), n.name};
    for (const std::string& name : own) ++named[name];
  }
  std::vector<std::string> out;
  out.reserve(topology.nodes().size());
  for (const fabric::Node& n : topology.nodes()) {
    std::string chosen = n.name;
    for (const std::string& name : {FirstWord(n.description), n.description}) {
      if (!name.empty() && named[name] == 1) {
        chosen = name;
        break;
      }
    }
    out.push_back(std::move(chosen));
  }
  return out;
}

bool SelectHosted(const fabric::Topology& topology, const std::string& hosts,
                  const std::string& part, std::vector<bool>* hosted, std::string* error) {
  const auto& nodes = topology.nodes();
  hosted->assign(nodes.size(), hosts.empty() && part.empty());
  if (!hosts.empty()) {
    for (std::size_t at = 0; at <= hosts.size();) {
      const std::size_t comma = std::min(hosts.find(',', at), hosts.size());
      const auto node = FindNode(topology, hosts.substr(at, comma - at), error);
      if (!node) {
        *error = "--hosts: " + *error;
        return false;
      }
      (*hosted)[*node] = true;
      at = comma + 1;
    }
  }
  if (part.empty()) return true;
  unsigned index = 0, count = 0;
  if (!ParsePart(part, &index, &count)) {
    *error = "--part: \"" + part + "\" is not I/N with 1 <= I <= N";
    return false;
  }
  // Switches in runs; then each CA follows the switch it is cabled to.
  std::vector<fabric::NodeIndex> switches, loose_cas;
  for (fabric::NodeIndex i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_switch()) switches.push_back(i);
  }
  for (std::size_t s = 0; s < switches.size(); ++s)
    (*hosted)[switches[s]] = s * count / switches.size() == index;
  for (fabric::NodeIndex i = 0; i < nodes.size(); ++i) {
    if (nodes[i].is_switch()) continue;
    std::optional<fabric::NodeIndex> leaf;
    for (uint8_t p = 1; p <= nodes[i].num_ports && !leaf; ++p) {
      const auto peer = topology.Peer({i, p});
      if (peer && nodes[peer->node].is_switch()) leaf = peer->node;
    }
    if (leaf) {
      (*hosted)[i] = (*hosted)[*leaf];
    } else {
      loose_cas.push_back(i);
    }
  }
  for (std::size_t c = 0; c < loose_cas.size(); ++c)
    (*hosted)[loose_cas[c]] = c * count / loose_cas.size() == index;
  return true;
}

}  // namespace softib::softibd
