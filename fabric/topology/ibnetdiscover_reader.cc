#include "fabric/topology/ibnetdiscover_reader.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fabric/topology/line_cursor.h"

namespace softib::fabric {
namespace {

// Thrown inside the parser only; ReadIbnetdiscover turns it into ReadResult::error.
struct Failure {
  int line;  // 0: not tied to one line
  std::string message;
};

[[noreturn]] void Fail(int line, std::string message) { throw Failure{line, std::move(message)}; }

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string Shown(std::string_view text) {
  constexpr std::size_t kMax = 40;
  std::string s(text.substr(0, kMax));
  if (text.size() > kMax) s += "...";
  return "'" + s + "'";
}

bool Printable(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return false;
  return true;
}

std::string_view TrimLeft(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  return s;
}

std::string_view TrimRight(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string_view LeadingWord(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z'))) ++n;
  return s.substr(0, n);
}

// ibsim's defaults for a port that says nothing: 4x enabled, SDR enabled (sim.h).
constexpr EnabledRates kIbsimDefaultRates{2, 1, 0, false};

// One side of a link, as a port line describes it.
struct PortEnd {
  NodeIndex node = 0;
  uint8_t port = 0;
  int line = 0;
  std::string_view remote;
  uint64_t remote_port = 1;  // ibsim: a missing [n] means port 1
  std::optional<uint64_t> remote_guid;
  EnabledRates rates;
  std::optional<LinkWidth> width;  // from a "lid N 4xQDR" annotation
  std::optional<LinkSpeed> speed;
};

class Parser {
 public:
  explicit Parser(std::string_view text) { Split(text); }

  Topology Run() {
    for (std::size_t i = 0; i < lines_.size();) i = TopLevel(i);
    if (topology_.nodes().empty()) Fail(0, "no nodes (expected Switch/Ca/Hca/Rt records)");
    Connect();
    std::optional<NodeIndex> culprit;
    if (std::string e = topology_.Validate(&culprit); !e.empty())
      Fail(culprit ? header_line_[*culprit] : 0, e);
    return std::move(topology_);
  }

 private:
  void Split(std::string_view text) {
    while (!text.empty()) {
      std::size_t nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      lines_.push_back(line);
      if (nl == std::string_view::npos) break;
      text.remove_prefix(nl + 1);
    }
  }

  // Handles the statement on line i; returns the index of the next unread line.
  std::size_t TopLevel(std::size_t i) {
    const int line_no = static_cast<int>(i) + 1;
    const std::string_view line = TrimLeft(lines_[i]);
    if (line.empty() || line.front() == '#') return i + 1;
    if (line.front() == '[' || line.front() == '@')
      Fail(line_no, "port line outside a node record (a Switch/Ca header must come first)");
    const std::string_view word = LeadingWord(line);
    LineCursor cur(line.substr(word.size()));
    if (word == "Switch") return NodeRecord(NodeType::kSwitch, cur, i);
    if (word == "Ca" || word == "Hca") return NodeRecord(NodeType::kCa, cur, i);
    if (word == "Rt") return NodeRecord(NodeType::kRouter, cur, i);
    if (word == "switchguid") {
      GuidBase(NodeType::kSwitch, cur, line_no);
    } else if (word == "caguid" || word == "hcaguids") {
      GuidBase(NodeType::kCa, cur, line_no);
    } else if (word == "rtguid") {
      GuidBase(NodeType::kRouter, cur, line_no);
    } else if (word == "vendid") {
      const uint64_t v = Assigned(cur, line_no, word);
      if (v > 0xFFFFFF) Fail(line_no, "vendid " + Hex(v) + " does not fit in 24 bits");
      vendor_id_ = static_cast<uint32_t>(v);
    } else if (word == "devid") {
      const uint64_t v = Assigned(cur, line_no, word);
      if (v > 0xFFFF) Fail(line_no, "devid " + Hex(v) + " does not fit in 16 bits");
      device_id_ = static_cast<uint16_t>(v);
    } else if (word == "sysimgguid") {
      system_image_guid_ = Assigned(cur, line_no, word);
    } else if (word == "width") {
      default_rates_.width =
          static_cast<uint8_t>(Option('w', Assigned(cur, line_no, word), line_no));
    } else if (word == "speed") {
      default_rates_.speed =
          static_cast<uint8_t>(Option('s', Assigned(cur, line_no, word), line_no));
    } else if (word == "extspeed") {
      default_rates_.speed_ext =
          static_cast<uint8_t>(Option('e', Assigned(cur, line_no, word), line_no));
    } else if (word == "Chassis" || word == "Hostname" || word == "pdebug") {
      // ibnetdiscover -g grouping lines and ibsim's parser debug switch: nothing to load.
    } else if (word == "include" || word == "module" || word == "do") {
      Fail(line_no, "'" + std::string(word) + "' (an ibsim extension) is not supported");
    } else {
      Fail(line_no, "unknown statement " + Shown(word.empty() ? line : word));
    }
    return i + 1;
  }

  // "=value" after a keyword; trailing "(...)" or "# ..." is allowed, as ibnetdiscover
  // prints "switchguid=0x...(portguid)" and "sysimgguid=0x...  # Chassis 1".
  uint64_t Assigned(LineCursor& cur, int line_no, std::string_view word) {
    cur.SkipSpaces();
    if (!cur.Consume('=')) Fail(line_no, std::string(word) + ": missing '='");
    return Value(cur, line_no, word);
  }

  uint64_t Value(LineCursor& cur, int line_no, std::string_view word) {
    cur.SkipSpaces();
    const auto v = cur.Number();
    if (!v) Fail(line_no, std::string(word) + ": bad number " + Shown(cur.rest()));
    if (!cur.done() && cur.peek() != ' ' && cur.peek() != '\t' && cur.peek() != '(' &&
        cur.peek() != '#')
      Fail(line_no, std::string(word) + ": bad number " + Shown(cur.rest()));
    return *v;
  }

  // switchguid=G sets the next GUID; switchguid+N is relative to the last absolute value.
  void GuidBase(NodeType type, LineCursor& cur, int line_no) {
    const char* word = type == NodeType::kSwitch ? "switchguid"
                       : type == NodeType::kCa   ? "caguid"
                                                 : "rtguid";
    cur.SkipSpaces();
    const bool relative = cur.Consume('+');
    if (!relative && !cur.Consume('=')) Fail(line_no, std::string(word) + ": missing '=' or '+'");
    const uint64_t v = Value(cur, line_no, word);
    const auto t = static_cast<std::size_t>(type);
    if (!relative) absolute_guid_[t] = v;
    next_guid_[t] = relative ? absolute_guid_[t] + v : v;
    if (type == NodeType::kSwitch) {
      switch_port_guid_.reset();
      if (cur.Consume('(')) {
        const auto pg = cur.Hex();
        if (!pg || !cur.Consume(')')) Fail(line_no, "switchguid: bad port GUID in (...)");
        switch_port_guid_ = *pg;
      }
    }
  }

  static uint64_t Option(char letter, uint64_t v, int line_no) {
    switch (letter) {
      case 'w':
        if (v < 1 || v > 31) Fail(line_no, "bad width " + std::to_string(v) + " (mask 1..31)");
        return v;
      case 's':
        if (v > 7) Fail(line_no, "bad speed " + std::to_string(v) + " (mask 1..7, 0 = QDR)");
        return v == 0 ? 4 : v;
      default:
        if (v > 15) Fail(line_no, "bad extended speed " + std::to_string(v) + " (mask 0..15)");
        return v;
    }
  }

  std::size_t NodeRecord(NodeType type, LineCursor& cur, std::size_t i) {
    const int line_no = static_cast<int>(i) + 1;
    cur.SkipSpaces();
    const auto ports = cur.Number();
    if (!ports) Fail(line_no, "node header needs a port count");
    if (*ports == 0 || *ports > kMaxPorts)
      Fail(line_no, "port count " + std::to_string(*ports) + " out of range 1..254");
    cur.SkipSpaces();
    bool unterminated = false;
    const auto name = cur.Quoted(&unterminated);
    if (unterminated) Fail(line_no, "unterminated quoted string");
    if (!name) Fail(line_no, "node header without a quoted node id");
    if (name->empty()) Fail(line_no, "empty node id");
    if (name->size() > kMaxNodeName || !Printable(*name) ||
        name->find_first_of("#@") != std::string_view::npos)
      Fail(line_no, "bad node id " + Shown(*name) + " (1..64 characters, no # or @)");

    std::string_view description = *name;  // ibsim's default
    bool enhanced_port0 = false;
    uint64_t lid = 0, lmc = 0;
    cur.SkipSpaces();
    if (!cur.done()) {
      if (!cur.Consume('#'))
        Fail(line_no, "unexpected text " + Shown(cur.rest()) + " after the node id");
      cur.SkipSpaces();
      if (cur.peek() == '"') {
        description = *cur.Quoted(&unterminated);
        if (unterminated) Fail(line_no, "unterminated quoted string");
      } else {
        std::string_view rest = cur.rest();
        std::size_t end = rest.size();
        for (std::string_view stop : {" enhanced port ", " base port ", " lid ", " lmc "})
          end = std::min(end, rest.find(stop));
        description = TrimRight(rest.substr(0, end));
        cur = LineCursor(rest.substr(end));
      }
      for (;;) {
        cur.SkipSpaces();
        if (cur.done()) break;
        if (cur.ConsumeWord("enhanced port 0")) {
          enhanced_port0 = true;
        } else if (cur.ConsumeWord("base port 0")) {
          enhanced_port0 = false;
        } else if (cur.ConsumeWord("lid ")) {
          lid = Lid(cur, line_no);
        } else if (cur.ConsumeWord("lmc ")) {
          lmc = Lmc(cur, line_no);
        } else {
          cur.Token();  // other annotations, e.g. " (scp)"
        }
      }
    }
    if (description.empty()) Fail(line_no, "empty node description");
    if (description.size() > kMaxNodeDescription)
      Fail(line_no,
           "node description is " + std::to_string(description.size()) + " bytes; at most 64");
    if (!Printable(description) || description.find('"') != std::string_view::npos)
      Fail(line_no, "node description may not hold control characters or a double quote");

    const auto t = static_cast<std::size_t>(type);
    const uint64_t guid = next_guid_[t];
    next_guid_[t] += type == NodeType::kSwitch ? 1 : *ports + 1;  // ibsim's reservation
    Node node = MakeNode(type, std::string(*name), std::string(description), guid,
                         static_cast<uint8_t>(*ports));
    if (system_image_guid_ != 0) node.system_image_guid = system_image_guid_;
    node.vendor_id = vendor_id_;
    node.device_id = device_id_;
    vendor_id_ = 0;  // vendid= and sysimgguid= apply to the next node only; devid= stays
    system_image_guid_ = 0;
    if (type == NodeType::kSwitch) {
      if (switch_port_guid_) node.ports[0].guid = *switch_port_guid_;
      switch_port_guid_.reset();
      node.enhanced_port0 = enhanced_port0;
      node.ports[0].lid = static_cast<uint16_t>(lid);
      node.ports[0].lmc = static_cast<uint8_t>(lmc);
    }

    if (auto [it, fresh] = by_name_.emplace(*name, topology_.nodes().size()); !fresh)
      Fail(line_no, "duplicate node id " + Shown(*name) + " (first on line " +
                        std::to_string(header_line_[it->second]) + ")");
    if (auto [it, fresh] = by_guid_.emplace(guid, topology_.nodes().size()); !fresh)
      Fail(line_no, "duplicate node GUID " + Hex(guid) + " (first on line " +
                        std::to_string(header_line_[it->second]) + ")");
    const NodeIndex index = topology_.AddNode(std::move(node));
    header_line_.push_back(line_no);
    end_base_.push_back(end_at_.size());
    end_at_.resize(end_at_.size() + *ports + 1, -1);

    // Port lines follow; '#' lines between them are skipped; anything else ends the record.
    std::size_t j = i + 1;
    for (; j < lines_.size(); ++j) {
      const std::string_view l = TrimLeft(lines_[j]);
      if (!l.empty() && l.front() == '#') continue;
      if (!l.empty() && l.front() == '@')
        Fail(static_cast<int>(j) + 1, "port aliases ('@' lines) are not supported");
      if (l.empty() || l.front() != '[') break;
      PortLine(index, l, static_cast<int>(j) + 1);
    }
    return j;
  }

  static uint64_t Lid(LineCursor& cur, int line_no) {
    cur.SkipSpaces();
    const auto v = cur.Number();
    if (!v) Fail(line_no, "bad LID " + Shown(cur.rest()));
    if (*v > kMaxUnicastLid) Fail(line_no, "LID " + std::to_string(*v) + " is not a unicast LID");
    return *v;
  }

  static uint64_t Lmc(LineCursor& cur, int line_no) {
    cur.SkipSpaces();
    const auto v = cur.Number();
    if (!v) Fail(line_no, "bad LMC " + Shown(cur.rest()));
    if (*v > 7) Fail(line_no, "LMC " + std::to_string(*v) + " out of range 0..7");
    return *v;
  }

  // "[p]", an optional "[ext n]" (ibnetdiscover -g), returns p.
  static uint64_t PortNumber(LineCursor& cur, int line_no, const char* what) {
    if (!cur.Consume('[')) Fail(line_no, std::string("missing [") + what + "]");
    const auto p = cur.Number();
    if (!p) Fail(line_no, std::string("bad ") + what + " " + Shown(cur.rest()));
    if (!cur.Consume(']')) Fail(line_no, std::string("missing ']' after the ") + what);
    if (cur.ConsumeWord("[ext")) {
      cur.SkipSpaces();
      if (!cur.Number() || !cur.Consume(']')) Fail(line_no, "bad [ext n] group");
    }
    return *p;
  }

  static std::optional<uint64_t> GuidGroup(LineCursor& cur, int line_no) {
    if (!cur.Consume('(')) return std::nullopt;
    const auto g = cur.Hex();
    if (!g || !cur.Consume(')')) Fail(line_no, "bad port GUID in (...)");
    return g;
  }

  void PortLine(NodeIndex index, std::string_view text, int line_no) {
    const Node& node = topology_.node(index);
    LineCursor cur(text);
    const uint64_t port = PortNumber(cur, line_no, "port number");
    if (port == 0) Fail(line_no, "port 0 cannot be cabled");
    if (port > node.num_ports)
      Fail(line_no, "port " + std::to_string(port) + " out of range: " + node.name + " has " +
                        std::to_string(node.num_ports) + " ports");
    int32_t& slot = end_at_[end_base_[index] + port];
    if (slot != -1)
      Fail(line_no, "port " + std::to_string(port) + " of " + node.name +
                        " described twice (first on line " +
                        std::to_string(ends_[static_cast<std::size_t>(slot)].line) + ")");
    PortEnd end;
    end.node = index;
    end.port = static_cast<uint8_t>(port);
    end.line = line_no;
    end.rates = default_rates_;
    std::optional<uint64_t> own_guid = GuidGroup(cur, line_no);
    cur.SkipSpaces();
    bool unterminated = false;
    const auto remote = cur.Quoted(&unterminated);
    if (unterminated) Fail(line_no, "unterminated quoted string");
    if (!remote) Fail(line_no, "port line without a quoted remote node id");
    end.remote = *remote;
    if (cur.peek() == '[') end.remote_port = PortNumber(cur, line_no, "remote port number");
    cur.SkipSpaces();
    end.remote_guid = GuidGroup(cur, line_no);

    // ibsim's options (w=, s=, e=) before the comment.
    for (;;) {
      cur.SkipSpaces();
      if (cur.done() || cur.peek() == '#') break;
      const std::string_view token = cur.Token("#");
      const std::size_t eq = token.find('=');
      if (eq == std::string_view::npos)
        Fail(line_no, "unexpected text " + Shown(token) + " on a port line");
      LineCursor value(token.substr(eq + 1));
      const auto v = value.Number();
      if (!v || !value.done()) Fail(line_no, "bad option " + Shown(token));
      const std::string_view key = token.substr(0, eq);
      if (key == "w") end.rates.width = static_cast<uint8_t>(Option('w', *v, line_no));
      if (key == "s") end.rates.speed = static_cast<uint8_t>(Option('s', *v, line_no));
      if (key == "e") end.rates.speed_ext = static_cast<uint8_t>(Option('e', *v, line_no));
    }

    uint64_t own_lid = 0, own_lmc = 0;
    if (cur.Consume('#')) {
      cur.SkipSpaces();
      bool rate_follows = false;  // a "lid N" was read and a rate may come next
      if (!node.is_switch() && cur.ConsumeWord("lid ")) {  // "# lid 5 lmc 0 ..." (CA lines)
        own_lid = Lid(cur, line_no);
        cur.SkipSpaces();
        // ibsim takes the first "lid" of a CA line as the port's own and the last one (after
        // the last quote) as the link's: in "# lid 3 4xQDR" it is both.
        rate_follows = cur.peek() >= '0' && cur.peek() <= '9';
        if (cur.ConsumeWord("lmc ")) own_lmc = Lmc(cur, line_no);
        cur.SkipSpaces();
      }
      if (cur.peek() == '"') {
        cur.Quoted(&unterminated);  // the peer's description: informative only
        if (unterminated) Fail(line_no, "unterminated quoted string");
        cur.SkipSpaces();
      }
      if (cur.ConsumeWord("lid ")) {  // "lid 3 4xQDR": the peer's LID, then the link rate
        Lid(cur, line_no);
        cur.SkipSpaces();
        rate_follows = true;
      }
      if (rate_follows) {
        const std::string_view rate = cur.Token();
        if (!rate.empty()) {
          const std::size_t x = rate.find('x');
          if (x == std::string_view::npos) Fail(line_no, "bad link rate " + Shown(rate));
          end.width = ParseLinkWidth(rate.substr(0, x + 1));
          if (!end.width) Fail(line_no, "unknown link width " + Shown(rate.substr(0, x + 1)));
          end.speed = ParseLinkSpeed(rate.substr(x + 1));
          if (!end.speed) Fail(line_no, "unknown link speed " + Shown(rate.substr(x + 1)));
          end.rates = EnabledFor(*end.width, *end.speed);  // as ibsim: the annotation wins
        }
      }
      // Anything after ("s=4 w=2 v=4" of ibnetdiscover -f, "slot 3", "(scp)") is comment.
    }

    if (!node.is_switch()) {
      Node& n = topology_.mutable_node(index);
      if (own_guid) n.ports[port].guid = *own_guid;
      n.ports[port].lid = static_cast<uint16_t>(own_lid);
      n.ports[port].lmc = static_cast<uint8_t>(own_lmc);
    }
    slot = static_cast<int32_t>(ends_.size());
    ends_.push_back(end);
  }

  void Connect() {
    for (std::size_t k = 0; k < ends_.size(); ++k) {
      const PortEnd& e = ends_[k];
      const Node& here = topology_.node(e.node);
      const std::string where = here.name + " port " + std::to_string(e.port);
      auto it = by_name_.find(e.remote);
      if (it == by_name_.end())
        Fail(e.line, where + " goes to unknown node \"" + std::string(e.remote) + "\"");
      const auto remote = static_cast<NodeIndex>(it->second);
      const Node& there = topology_.node(remote);
      const std::string target = there.name + " port " + std::to_string(e.remote_port);
      if (e.remote_port == 0 || e.remote_port > there.num_ports)
        Fail(e.line, where + " goes to port " + std::to_string(e.remote_port) + " of " +
                         there.name + ", which has ports 1.." + std::to_string(there.num_ports));
      if (remote == e.node && e.remote_port == e.port) Fail(e.line, where + " is cabled to itself");
      const int32_t r = end_at_[end_base_[remote] + e.remote_port];
      if (r < 0)
        Fail(e.line, "asymmetric link: " + where + " goes to " + target +
                         ", but there is no line for " + target);
      const PortEnd& back = ends_[static_cast<std::size_t>(r)];
      const auto back_target = by_name_.find(back.remote);
      if (back_target == by_name_.end() || back_target->second != e.node ||
          back.remote_port != e.port)
        Fail(e.line, "asymmetric link: " + where + " goes to " + target + ", but " + target +
                         " (line " + std::to_string(back.line) + ") goes to " +
                         std::string(back.remote) + " port " + std::to_string(back.remote_port));
      if (e.remote_guid && !there.is_switch() && *e.remote_guid != there.ports[e.remote_port].guid)
        Fail(e.line, "port GUID " + Hex(*e.remote_guid) + " given for " + target +
                         " differs from " + Hex(there.ports[e.remote_port].guid) + " (line " +
                         std::to_string(back.line) + ")");
      if (static_cast<std::size_t>(r) < k) continue;  // the pair was joined from the other end

      Link link;
      link.a = {e.node, e.port};
      link.b = {remote, static_cast<uint8_t>(e.remote_port)};
      if (e.width && back.width) {
        if (*e.width != *back.width || *e.speed != *back.speed)
          Fail(e.line, "asymmetric link: " + where + " says " + std::string(ToString(*e.width)) +
                           std::string(ToString(*e.speed)) + " but " + target + " (line " +
                           std::to_string(back.line) + ") says " +
                           std::string(ToString(*back.width)) + std::string(ToString(*back.speed)));
        link.width = *e.width;
        link.speed = *e.speed;
      } else {
        const auto w = CommonWidth(e.rates, back.rates);
        if (!w) Fail(e.line, "no common link width between " + where + " and " + target);
        const auto s = CommonSpeed(e.rates, back.rates);
        if (!s) Fail(e.line, "no common link speed between " + where + " and " + target);
        link.width = *w;
        link.speed = *s;
      }
      topology_.AddLink(link);
    }
  }

  std::vector<std::string_view> lines_;
  Topology topology_;
  std::vector<int> header_line_;       // per node
  std::vector<std::size_t> end_base_;  // per node: first slot in end_at_
  std::vector<int32_t> end_at_;        // per node port: index in ends_
  std::vector<PortEnd> ends_;
  std::unordered_map<std::string_view, std::size_t> by_name_;
  std::unordered_map<uint64_t, std::size_t> by_guid_;

  // ibsim's running state: GUID counters per node type (CAs from 0x100000, switches from
  // 0x200000, routers from 0), per-node vendid/sysimgguid, sticky devid and rate defaults.
  uint64_t absolute_guid_[4] = {0, 0x100000, 0x200000, 0};
  uint64_t next_guid_[4] = {0, 0x100000, 0x200000, 0};
  std::optional<uint64_t> switch_port_guid_;
  uint32_t vendor_id_ = 0;
  uint16_t device_id_ = 0;
  uint64_t system_image_guid_ = 0;
  EnabledRates default_rates_ = kIbsimDefaultRates;
};

}  // namespace

ReadResult ReadIbnetdiscover(std::string_view text, std::string_view source) {
  ReadResult result;
  try {
    Parser parser(text);
    result.topology = parser.Run();
  } catch (const Failure& f) {
    result.topology.reset();
    result.error = std::string(source) + ":" +
                   (f.line > 0 ? std::to_string(f.line) + ":" : std::string()) + " " + f.message;
  }
  return result;
}

ReadResult ReadIbnetdiscoverFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    ReadResult r;
    r.error = path + ": cannot open: " + std::strerror(errno);
    return r;
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) {
    ReadResult r;
    r.error = path + ": read error";
    return r;
  }
  return ReadIbnetdiscover(buf.str(), path);
}

}  // namespace softib::fabric
