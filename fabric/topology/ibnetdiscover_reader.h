// Reads the ibnetdiscover topology format: what `ibnetdiscover` prints on a real cluster
// (vendid=/devid=/sysimgguid=/switchguid=/caguid= lines, node headers, port lines with
// their "# lid 5 lmc 0 \"desc\" lid 3 4xQDR" annotations) and the extra forms ibsim's
// own parser takes (Hca/Rt headers, w=/s=/e= port options, width=/speed=/extspeed=
// defaults, GUID counters when a file gives none). The result is a validated Topology or
// one error "source:line: message"; never a partial topology.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "fabric/topology/topology.h"

namespace softib::fabric {

struct ReadResult {
  std::optional<Topology> topology;  // validated; present only on success
  std::string error;                 // "source:line: message" (or "source: message")
  bool ok() const { return topology.has_value(); }
};

ReadResult ReadIbnetdiscover(std::string_view text, std::string_view source = "<input>");
ReadResult ReadIbnetdiscoverFile(const std::string& path);

}  // namespace softib::fabric
