// LID assignment and the guid2lid file.
#include "softib/sm/lids.h"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace softib::sm {

bool Guid2Lid::Parse(const std::string& text, const std::string& name, std::string* error) {
  entries_.clear();
  std::istringstream in(text);
  unsigned line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    uint64_t guid = 0;
    unsigned base = 0, top = 0;
    char extra = 0;
    const int n =
        std::sscanf(line.c_str() + first, "%" SCNx64 " %x %x %c", &guid, &base, &top, &extra);
    if (n != 3 || guid == 0 || base == 0 || top < base || top > kMaxUnicastLid) {
      if (error)
        *error = name + ":" + std::to_string(line_no) +
                 ": expected \"0x<port guid> 0x<base lid> 0x<top lid>\" with 1 <= base <= top <= "
                 "0xbfff";
      entries_.clear();
      return false;
    }
    entries_[guid] = {static_cast<uint16_t>(base), static_cast<uint16_t>(top)};
  }
  return true;
}

bool Guid2Lid::Load(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    entries_.clear();
    if (errno == ENOENT) return true;  // first start
    if (error) *error = path + ": " + std::strerror(errno);
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path, error);
}

std::string Guid2Lid::Format() const {
  std::string out;
  char line[64];
  for (const auto& [guid, range] : entries_) {
    std::snprintf(line, sizeof line, "0x%016" PRIx64 " 0x%04x 0x%04x\n", guid, range.first,
                  range.second);
    out += line;
  }
  return out;
}

bool Guid2Lid::Save(const std::string& path, std::string* error) const {
  // Write a new file and rename it, so that a crash never leaves half a file.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << Format();
    if (!out.flush()) {
      if (error) *error = tmp + ": " + std::strerror(errno);
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    if (error) *error = path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

namespace {

class LidSpace {
 public:
  LidSpace() : used_(kMaxUnicastLid + 1, false) { used_[0] = true; }
  bool Free(unsigned base, unsigned count) const {
    if (base == 0 || base % count != 0 || base + count - 1 > kMaxUnicastLid) return false;
    for (unsigned i = 0; i < count; ++i)
      if (used_[base + i]) return false;
    return true;
  }
  void Take(unsigned base, unsigned count) {
    for (unsigned i = 0; i < count; ++i) used_[base + i] = true;
  }
  // The lowest free block of `count` LIDs aligned on `count`, or 0.
  unsigned Allocate(unsigned count) {
    for (unsigned base = std::max(count, next_hint_ / count * count);
         base + count - 1 <= kMaxUnicastLid; base += count) {
      if (Free(base, count)) {
        Take(base, count);
        if (count == 1) next_hint_ = base + 1;
        return base;
      }
    }
    return 0;
  }

 private:
  std::vector<bool> used_;
  unsigned next_hint_ = 1;
};

}  // namespace

LidReport AssignLids(Subnet& subnet, uint8_t lmc, Guid2Lid* remembered) {
  LidReport report;
  if (lmc > 7) {
    report.error = "LMC " + std::to_string(lmc) + " is out of range (0..7)";
    return report;
  }
  const std::vector<EndPort> ends = subnet.EndPorts();
  report.end_ports = static_cast<unsigned>(ends.size());
  auto lmc_of = [&](const EndPort& e) -> uint8_t {
    const SmNode& node = subnet.node(e.node);
    if (node.is_switch() && !node.switch_info.EnhancedPort0) return 0;
    return lmc;
  };
  auto guid_of = [&](const EndPort& e) {
    const SmNode& node = subnet.node(e.node);
    return node.is_switch() ? node.guid : node.ports[e.port].guid;
  };

  LidSpace space;
  std::vector<bool> done(ends.size(), false);
  for (const EndPort& e : ends) subnet.node(e.node).ports[e.port].lid = 0;
  // 1. The remembered LIDs, when the block still fits this port's LMC.
  if (remembered) {
    for (std::size_t i = 0; i < ends.size(); ++i) {
      auto it = remembered->entries().find(guid_of(ends[i]));
      if (it == remembered->entries().end()) continue;
      const unsigned count = 1u << lmc_of(ends[i]);
      const unsigned base = it->second.first;
      if (!space.Free(base, count)) continue;
      space.Take(base, count);
      SmPort& port = subnet.node(ends[i].node).ports[ends[i].port];
      port.lid = static_cast<uint16_t>(base);
      port.lmc = lmc_of(ends[i]);
      done[i] = true;
      ++report.from_file;
    }
  }
  // 2. The LIDs the ports already have.
  for (std::size_t i = 0; i < ends.size(); ++i) {
    if (done[i]) continue;
    SmPort& port = subnet.node(ends[i].node).ports[ends[i].port];
    const unsigned count = 1u << lmc_of(ends[i]);
    const unsigned base = port.info.LID;
    if (!space.Free(base, count)) continue;
    space.Take(base, count);
    port.lid = static_cast<uint16_t>(base);
    port.lmc = lmc_of(ends[i]);
    done[i] = true;
    ++report.kept;
  }
  // 3. New blocks for the rest.
  for (std::size_t i = 0; i < ends.size(); ++i) {
    if (done[i]) continue;
    SmPort& port = subnet.node(ends[i].node).ports[ends[i].port];
    const unsigned base = space.Allocate(1u << lmc_of(ends[i]));
    if (base == 0) {
      report.error = "out of unicast LIDs (" + std::to_string(ends.size()) + " end ports, LMC " +
                     std::to_string(lmc) + ")";
      return report;
    }
    port.lid = static_cast<uint16_t>(base);
    port.lmc = lmc_of(ends[i]);
    ++report.assigned;
  }
  subnet.IndexLids();
  if (remembered) {
    for (const EndPort& e : ends) {
      const SmPort& port = subnet.node(e.node).ports[e.port];
      remembered->entries()[guid_of(e)] = {port.lid,
                                           static_cast<uint16_t>(port.lid + (1u << port.lmc) - 1)};
    }
  }
  return report;
}

}  // namespace softib::sm
