// The partition file (a subset of OpenSM's partitions.conf) and the P_Key table plan.
#include "softib/sm/partitions.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

namespace softib::sm {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t at; (at = s.find(sep)) != std::string_view::npos; s.remove_prefix(at + 1))
    out.push_back(Trim(s.substr(0, at)));
  out.push_back(Trim(s));
  return out;
}

bool Number(std::string_view text, uint64_t max, uint64_t* out) {
  const std::string s(text);
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (*end || errno || v > max) return false;
  *out = v;
  return true;
}

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool IsIpGroup(const std::array<uint8_t, 16>& mgid) {
  // IPoIB's MGIDs (RFC 4391): ff1S:401b (IPv4) or ff1S:601b (IPv6), then the P_Key.
  return mgid[3] == 0x1b && (mgid[2] == 0x40 || mgid[2] == 0x60);
}

// One `mgid=GID[,flag]...` line of partition `p` (its P_Key, rate and MTU already read).
bool ParseGroupLine(std::string_view text, const Partition& p, std::vector<PartitionGroup>* out,
                    std::string* why) {
  const auto items = Split(text, ',');
  const std::string gid_text(Trim(items[0].substr(items[0].find('=') + 1)));
  PartitionGroup g;
  in6_addr address{};
  if (inet_pton(AF_INET6, gid_text.c_str(), &address) != 1 || address.s6_addr[0] != 0xFF)
    return *why = "mgid '" + gid_text + "' is not a multicast GID (ff..)", false;
  std::copy(std::begin(address.s6_addr), std::end(address.s6_addr), g.mgid.begin());
  const bool ip = IsIpGroup(g.mgid);
  const uint16_t pkey = static_cast<uint16_t>(p.pkey | kFullMember);
  if (ip) {
    const uint16_t in_gid = static_cast<uint16_t>(g.mgid[4] << 8 | g.mgid[5]);
    if (in_gid == 0) {
      g.mgid[4] = static_cast<uint8_t>(pkey >> 8);
      g.mgid[5] = static_cast<uint8_t>(pkey);
    } else if ((in_gid & 0x7FFF) != p.pkey) {
      return *why = "mgid '" + gid_text + "' carries another partition's P_Key", false;
    }
    g.qkey = 0x0B1B;
    g.rate = p.rate ? p.rate : g.rate;  // the broadcast group's (CreatePartitionGroups)
    g.mtu = p.mtu ? p.mtu : g.mtu;
  }
  const uint8_t partition_rate = g.rate, partition_mtu = g.mtu;
  std::vector<uint8_t> scopes;
  uint64_t v = 0;
  for (std::size_t i = 1; i < items.size(); ++i) {
    const std::size_t eq = items[i].find('=');
    const std::string_view key = Trim(items[i].substr(0, eq));
    const std::string_view value =
        eq == std::string_view::npos ? "" : Trim(items[i].substr(eq + 1));
    if (IEquals(key, "rate") && Number(value, 22, &v) && v >= 2) {
      g.rate = static_cast<uint8_t>(v);
    } else if (IEquals(key, "mtu") && Number(value, 5, &v) && v >= 1) {
      g.mtu = static_cast<uint8_t>(v);
    } else if (IEquals(key, "sl") && Number(value, 15, &v)) {
      g.sl = static_cast<uint8_t>(v);
    } else if (IEquals(key, "scope") && Number(value, 15, &v)) {
      scopes.push_back(static_cast<uint8_t>(v));
    } else if (IEquals(key, "Q_Key") && Number(value, 0xFFFFFFFF, &v)) {
      g.qkey = static_cast<uint32_t>(v);
    } else if (IEquals(key, "TClass") && Number(value, 0xFF, &v)) {
      g.tclass = static_cast<uint8_t>(v);
    } else if (IEquals(key, "FlowLabel") && Number(value, 0xFFFFF, &v)) {
      g.flow_label = static_cast<uint32_t>(v);
    } else {
      return *why = "unknown or bad group flag '" + std::string(items[i]) +
                    "' (rate=2..22, mtu=1..5, sl=0..15, scope=0..15, Q_Key=N, TClass=0..255, "
                    "FlowLabel=0..0xfffff)",
             false;
    }
  }
  // IPoIB needs every IP group at the broadcast group's rate and MTU (OpenSM checks the same).
  if (ip && (g.rate != partition_rate || g.mtu != partition_mtu))
    return *why = "IP group '" + gid_text + "' must have its partition's rate and mtu", false;
  if (scopes.empty()) scopes.push_back(g.mgid[1] & 0x0F);
  for (const uint8_t scope : scopes) {
    g.mgid[1] = static_cast<uint8_t>((g.mgid[1] & 0xF0) | scope);
    out->push_back(g);
  }
  return true;
}

// The member list of a definition with its `mgid=` lines taken out into out->groups. A group
// runs to the end of its line (its flags are comma-separated too).
bool ParseBody(std::string_view body, int line, Partition* out,
               std::vector<std::string_view>* items, std::string* why, int* error_line) {
  while (!body.empty()) {
    const std::size_t nl = body.find('\n');
    std::string_view text = body.substr(0, nl);
    body = nl == std::string_view::npos ? std::string_view{} : body.substr(nl + 1);
    std::size_t group_at = std::string_view::npos;
    char before = ',';  // the last non-blank character: ',' (or none) starts an item
    for (std::size_t at = 0; at < text.size() && group_at == std::string_view::npos; ++at) {
      if (before == ',' && IEquals(text.substr(at, 4), "mgid") &&
          Trim(text.substr(at + 4)).starts_with('='))
        group_at = at;
      if (!std::isspace(static_cast<unsigned char>(text[at]))) before = text[at];
    }
    if (group_at != std::string_view::npos) {
      if (!ParseGroupLine(text.substr(group_at), *out, &out->groups, why)) {
        *error_line = line;
        return false;
      }
      text = text.substr(0, group_at);
    }
    auto line_items = Split(text, ',');
    // A line's trailing comma: the list goes on (on the next line, or after a group).
    if (line_items.back().empty()) line_items.pop_back();
    items->insert(items->end(), line_items.begin(), line_items.end());
    ++line;
  }
  return true;
}

// One definition (the text between ';'s, comments removed); `line` is where it starts.
bool ParseDefinition(std::string_view text, int line, Partition* out, std::string* why,
                     int* error_line) {
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) return *why = "expected 'Name=PKey : members ;'", false;
  const auto head = Split(text.substr(0, colon), ',');
  const std::size_t eq = head[0].find('=');
  if (eq == std::string_view::npos) return *why = "expected Name=PKey before ':'", false;
  out->name = std::string(Trim(head[0].substr(0, eq)));
  out->line = line;
  uint64_t v = 0;
  if (out->name.empty()) return *why = "a partition needs a name", false;
  if (!Number(Trim(head[0].substr(eq + 1)), 0xFFFF, &v) || (v & 0x7FFF) == 0)
    return *why = "P_Key '" + std::string(Trim(head[0].substr(eq + 1))) +
                  "' is not a number in 0x0001..0x7fff",
           false;
  out->pkey = static_cast<uint16_t>(v & 0x7FFF);
  bool default_full = false;
  for (std::size_t i = 1; i < head.size(); ++i) {
    const std::string_view flag = head[i];
    const std::size_t feq = flag.find('=');
    const std::string_view key = Trim(flag.substr(0, feq));
    const std::string_view value = feq == std::string_view::npos ? "" : Trim(flag.substr(feq + 1));
    if (IEquals(key, "ipoib") && feq == std::string_view::npos) {
      out->ipoib = true;
    } else if (IEquals(key, "mtu") && Number(value, 5, &v) && v >= 1) {
      out->mtu = static_cast<uint8_t>(v);
    } else if (IEquals(key, "rate") && Number(value, 22, &v) && v >= 2) {
      out->rate = static_cast<uint8_t>(v);
    } else if (IEquals(key, "sl") && Number(value, 15, &v)) {
      out->sl = static_cast<uint8_t>(v);
    } else if (IEquals(key, "defmember") && (IEquals(value, "full") || IEquals(value, "limited"))) {
      default_full = IEquals(value, "full");
    } else {
      return *why = "unknown or bad flag '" + std::string(flag) +
                    "' (ipoib, mtu=1..5, rate=2..22, sl=0..15, defmember=full|limited)",
             false;
    }
  }
  // The body's first line: where the definition starts plus the line breaks before the colon.
  const auto head_text = text.substr(0, colon);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  const int body_line =
      line + static_cast<int>(std::count(head_text.begin() + static_cast<std::ptrdiff_t>(first),
                                         head_text.end(), '\n'));
  std::vector<std::string_view> items;
  if (!ParseBody(text.substr(colon + 1), body_line, out, &items, why, error_line)) return false;
  for (const std::string_view item : items) {
    PartitionMember m;
    m.full = default_full;
    const std::size_t meq = item.find('=');
    const std::string_view who = Trim(item.substr(0, meq));
    if (meq != std::string_view::npos) {
      const std::string_view how = Trim(item.substr(meq + 1));
      if (IEquals(how, "full") || IEquals(how, "both")) {
        m.full = true;
      } else if (IEquals(how, "limited")) {
        m.full = false;
      } else {
        return *why = "membership '" + std::string(how) + "' is not full, limited or both", false;
      }
    }
    if (who == "ALL") {
      m.kind = PartitionMember::Kind::kAll;
    } else if (who == "SELF") {
      m.kind = PartitionMember::Kind::kSelf;
    } else if (who == "ALL_CAS") {
      m.kind = PartitionMember::Kind::kAllCas;
    } else if (who == "ALL_SWITCHES") {
      m.kind = PartitionMember::Kind::kAllSwitches;
    } else if (Number(who, UINT64_MAX, &v) && v != 0) {
      m.kind = PartitionMember::Kind::kGuid;
      m.guid = v;
    } else {
      return *why = "member '" + std::string(who) +
                    "' is not ALL, SELF, ALL_CAS, ALL_SWITCHES or a port GUID",
             false;
    }
    out->members.push_back(m);
  }
  return true;
}

Partition DefaultPartition() {
  Partition p;
  p.name = "Default";
  p.pkey = kDefaultPKey;
  p.ipoib = true;
  p.members.push_back({PartitionMember::Kind::kAll, 0, true});
  return p;
}

}  // namespace

PartitionConfig DefaultPartitionConfig() { return PartitionConfig{{DefaultPartition()}}; }

bool ParsePartitions(std::string_view text, PartitionConfig* out, std::string* error) {
  PartitionConfig config;
  std::string pending;  // the definition being read, comments removed
  int line = 1, start = 0;
  std::set<uint16_t> pkeys;
  std::set<std::string> names;
  std::set<std::array<uint8_t, 16>> mgids;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : '\n';
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      --i;
      continue;
    }
    if (c == ';') {
      Partition p;
      std::string why;
      int error_line = start ? start : line;
      if (!ParseDefinition(pending, error_line, &p, &why, &error_line)) {
        *error = "line " + std::to_string(error_line) + ": " + why;
        return false;
      }
      for (const PartitionGroup& g : p.groups) {
        if (!mgids.insert(g.mgid).second) {
          *error = "line " + std::to_string(p.line) + ": partition '" + p.name +
                   "' repeats a multicast group (mgid) defined before";
          return false;
        }
      }
      if (!pkeys.insert(p.pkey).second || !names.insert(p.name).second) {
        *error = "line " + std::to_string(p.line) + ": partition '" + p.name +
                 "' repeats a name or P_Key defined before";
        return false;
      }
      config.partitions.push_back(std::move(p));
      pending.clear();
      start = 0;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c)) && start == 0) start = line;
    if (c == '\n') ++line;
    pending += c;
  }
  if (!Trim(pending).empty()) {
    *error = "line " + std::to_string(start) + ": definition not ended by ';'";
    return false;
  }
  // The default partition first; added when the file leaves it out.
  auto def = std::find_if(config.partitions.begin(), config.partitions.end(),
                          [](const Partition& p) { return p.pkey == kDefaultPKey; });
  if (def == config.partitions.end()) {
    config.partitions.insert(config.partitions.begin(), DefaultPartition());
  } else {
    std::rotate(config.partitions.begin(), def, def + 1);
  }
  *out = std::move(config);
  return true;
}

bool LoadPartitions(const std::string& path, PartitionConfig* out, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = path + ": cannot open";
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  if (!ParsePartitions(text.str(), out, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

bool HoldsPKey(const std::vector<uint16_t>& table, uint16_t pkey, bool full) {
  return std::any_of(table.begin(), table.end(), [&](uint16_t k) {
    return (k & 0x7FFF) == (pkey & 0x7FFF) && (k & 0x7FFF) != 0 && (!full || (k & kFullMember));
  });
}

PKeyPlan PlanPKeyTables(const Subnet& subnet, const PartitionConfig& config) {
  PKeyPlan plan;
  const EndPort self{subnet.sm_node, subnet.sm_node == kNoNode ? uint8_t{0} : subnet.sm_port};
  auto member_of = [&](const PartitionMember& m, const EndPort& e) {
    const SmNode& node = subnet.node(e.node);
    switch (m.kind) {
      case PartitionMember::Kind::kAll:
        return true;
      case PartitionMember::Kind::kSelf:
        return e == self;
      case PartitionMember::Kind::kAllCas:
        return !node.is_switch();
      case PartitionMember::Kind::kAllSwitches:
        return node.is_switch();
      case PartitionMember::Kind::kGuid:
        return (node.is_switch() ? node.guid : node.ports[e.port].guid) == m.guid;
    }
    return false;
  };
  for (const EndPort& e : subnet.EndPorts()) {
    const SmNode& node = subnet.node(e.node);
    std::vector<uint16_t> table;
    for (const Partition& p : config.partitions) {
      int membership = -1;  // -1 none, 0 limited, 1 full
      for (const PartitionMember& m : p.members)
        if (member_of(m, e)) membership = std::max(membership, m.full ? 1 : 0);
      if (p.pkey == kDefaultPKey && e == self) membership = 1;
      if (membership < 0) continue;
      table.push_back(static_cast<uint16_t>(p.pkey | (membership ? kFullMember : 0)));
    }
    const std::size_t cap = node.node_info.PartitionCap ? node.node_info.PartitionCap : 1;
    if (table.size() > cap) {
      plan.warnings.push_back("\"" + node.description + "\" port " + std::to_string(e.port) + ": " +
                              std::to_string(table.size()) + " partitions, room for " +
                              std::to_string(cap));
      table.resize(cap);
    }
    // A CA port's switch port enforces the same keys, when the switch can hold them.
    const SmPort& port = node.ports[e.port];
    if (!node.is_switch() && port.linked() && subnet.node(port.peer).is_switch()) {
      const SmNode& sw = subnet.node(port.peer);
      if (sw.has_switch_info && sw.switch_info.PartitionEnforcementCap >= table.size()) {
        plan.tables[{port.peer, port.peer_port}] = table;
        plan.enforce.push_back({port.peer, port.peer_port});
      }
    }
    plan.tables[e] = std::move(table);
  }
  return plan;
}

}  // namespace softib::sm
