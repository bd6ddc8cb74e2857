// LID assignment. Every end port (switch port 0, each CA port) gets a block of 2^LMC LIDs
// aligned on its size (switch port 0 without EnhancedPort0 always takes one LID, LMC 0, as
// IBA 7.11.1 and OpenSM do). In order of preference a port keeps: the LIDs a guid2lid file
// remembers for its port GUID (stable across SM restarts, OpenSM's format), then the LIDs it
// already has when they are valid and free (a fabric brought up before, or preset), then the
// lowest free aligned block.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "softib/sm/subnet.h"

namespace softib::sm {

// port GUID -> (base LID, top LID): OpenSM's guid2lid lines "0x<guid> 0x<base> 0x<top>".
class Guid2Lid {
 public:
  // A missing file is an empty map (first start). A malformed line is an error naming it.
  bool Load(const std::string& path, std::string* error);
  bool Save(const std::string& path, std::string* error) const;
  // Parses the text of a file; `name` is used in messages.
  bool Parse(const std::string& text, const std::string& name, std::string* error);
  std::string Format() const;

  std::map<uint64_t, std::pair<uint16_t, uint16_t>>& entries() { return entries_; }
  const std::map<uint64_t, std::pair<uint16_t, uint16_t>>& entries() const { return entries_; }

 private:
  std::map<uint64_t, std::pair<uint16_t, uint16_t>> entries_;
};

struct LidReport {
  std::string error;  // "" on success (e.g. "out of LIDs")
  unsigned from_file = 0;
  unsigned kept = 0;
  unsigned assigned = 0;
  unsigned end_ports = 0;
  bool ok() const { return error.empty(); }
};

// Fills SmPort::lid/lmc of every end port and indexes the LIDs; `remembered` may be null.
// Afterwards `remembered` (when given) describes the new assignment.
LidReport AssignLids(Subnet& subnet, uint8_t lmc, Guid2Lid* remembered);

}  // namespace softib::sm
