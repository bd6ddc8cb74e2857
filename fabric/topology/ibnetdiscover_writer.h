// Writes a topology in the layout `ibnetdiscover` prints (vendid/devid/sysimgguid/
// switchguid|caguid lines, then the node header and one line per cabled port, both ends of
// every link with the same "lid N 4xQDR" annotation), so that both our reader and real
// ibsim load it back with the same GUIDs, descriptions, LIDs, widths and speeds.
#pragma once

#include <string>

#include "fabric/topology/topology.h"

namespace softib::fabric {

struct WriteResult {
  std::string text;
  std::string error;  // empty on success
  bool ok() const { return error.empty(); }
};

// An unvalidated topology is validated (on a copy) first; an invalid one is not written.
WriteResult WriteIbnetdiscover(const Topology& topology);

// Returns "" or "path: reason".
std::string WriteIbnetdiscoverFile(const Topology& topology, const std::string& path);

}  // namespace softib::fabric
