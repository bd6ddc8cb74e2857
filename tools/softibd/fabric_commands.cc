#include "fabric_commands.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "fabric_part.h"
#include "softib/fabric/static_subnet.h"

namespace softib::softibd {

namespace {

std::string Error(const std::string& message) { return "error: " + message + "\n"; }

std::optional<uint64_t> Number(const std::string& text, uint64_t max) {
  if (text.empty() || text.size() > 19) return std::nullopt;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  if (value > max) return std::nullopt;
  return value;
}

void PrintDirection(std::ostream& out, const char* name, const fabric::LinkCounters& c,
                    const fabric::LinkFaults& f) {
  out << "  " << name << " carried=" << c.carried << " lost=" << c.lost
      << " corrupted=" << c.corrupted << " duplicated=" << c.duplicated
      << " reordered=" << c.reordered << " dropped_down=" << c.dropped_down << " | loss=" << f.loss
      << " corrupt=" << f.corrupt << " duplicate=" << f.duplicate << " reorder=" << f.reorder
      << " delay_us=" << f.delay_ns / 1000 << "\n";
}

}  // namespace

FabricCommands::FabricCommands(const fabric::Topology& topology,
                               const std::vector<int64_t>& cable_of_link,
                               const std::vector<bool>& hosted, fabric::FabricHost& host,
                               FabricTunnels& tunnels, bool static_routes)
    : topology_(topology), host_(host), tunnels_(tunnels), static_routes_(static_routes) {
  const std::vector<std::string> names = NodeNames(topology);
  for (std::size_t l = 0; l < cable_of_link.size(); ++l) {
    if (cable_of_link[l] < 0) continue;
    const fabric::Link& link = topology.links()[l];
    // Side 0 of a tunnel cable is the end hosted here.
    const bool swap = !hosted[link.a.node];
    CableInfo info;
    info.port[0] = swap ? link.b : link.a;
    info.port[1] = swap ? link.a : link.b;
    for (int side = 0; side < 2; ++side) {
      info.end[side] = names[info.port[side].node] + ":" + std::to_string(info.port[side].port);
    }
    const auto cable = static_cast<std::size_t>(cable_of_link[l]);
    if (cables_.size() <= cable) cables_.resize(cable + 1);
    cables_[cable] = std::move(info);
  }
}

std::optional<uint32_t> FabricCommands::FindCable(const std::string& name,
                                                  std::string* error) const {
  if (const auto index = Number(name, UINT32_MAX)) {
    if (*index < cables_.size() && !cables_[*index].end[0].empty())
      return static_cast<uint32_t>(*index);
    *error = "no cable " + name + " (`links` lists them)";
    return std::nullopt;
  }
  const std::size_t colon = name.rfind(':');
  const auto port = colon == std::string::npos ? std::nullopt : Number(name.substr(colon + 1), 254);
  if (!port) {
    *error = "\"" + name + "\" is neither a cable index nor NODE:PORT";
    return std::nullopt;
  }
  const auto node = FindNode(topology_, name.substr(0, colon), error);
  if (!node) return std::nullopt;
  for (uint32_t c = 0; c < cables_.size(); ++c) {
    for (const fabric::PortRef& end : cables_[c].port) {
      if (!cables_[c].end[0].empty() && end.node == *node && end.port == *port) return c;
    }
  }
  *error = "no cable at " + name + " in this daemon";
  return std::nullopt;
}

std::string FabricCommands::Execute(const std::vector<std::string>& args) {
  if (args.empty())
    return Error("no request (links, set, down, up, capture, capture-stop, remove, add)");
  const std::string& verb = args[0];
  const std::size_t want = verb == "links" ? 1 : verb == "capture" ? 3 : 2;
  if (verb == "links" || verb == "down" || verb == "up" || verb == "capture" ||
      verb == "capture-stop") {
    if (args.size() != want)
      return Error(verb + " takes " + std::to_string(want - 1) + " argument(s)" +
                   (want == 1   ? ""
                    : want == 2 ? ": CABLE"
                                : ": CABLE FILE"));
  } else if (verb == "set") {
    if (args.size() < 3) return Error("set takes CABLE key=value ...");
  } else {
    return Error("unknown request \"" + verb +
                 "\" (links, set, down, up, capture, capture-stop, remove, add)");
  }
  if (verb == "links") return Links();
  std::string error;
  const auto cable = FindCable(args[1], &error);
  if (!cable) return Error(error);
  if (verb == "set") return Set(*cable, {args.begin() + 2, args.end()});
  if (verb == "down" || verb == "up") return Flap(*cable, verb == "up");
  if (verb == "capture") return Capture(*cable, args[2]);
  return CaptureStop(*cable);
}

std::string FabricCommands::Links() const {
  std::ostringstream out;
  out << "ok\n";
  host_.With([&](fabric::Fabric& f) {
    for (uint32_t c = 0; c < cables_.size(); ++c) {
      const CableInfo& info = cables_[c];
      if (info.end[0].empty()) continue;
      out << "cable " << c << ": " << info.end[0] << " <-> " << info.end[1] << " "
          << (f.cable_up(c) ? "up" : "down");
      if (f.capturing(c)) out << " capturing(" << f.captured(c) << ")";
      const auto link = tunnels_.LinkOfCable(c);
      if (link) {
        const fabric::UdpTunnel& t = *tunnels_.tunnel();
        char id[24];
        std::snprintf(id, sizeof id, "%016" PRIx64, t.link_id(*link));
        out << " tunnel " << id << " peer=" << (t.peer(*link).empty() ? "-" : t.peer(*link))
            << (t.enabled(*link) ? "" : " disabled");
      }
      out << "\n";
      PrintDirection(out, "a->b", f.counters(c, 0), f.faults(c, 0));
      PrintDirection(out, "b->a", f.counters(c, 1), f.faults(c, 1));
      if (link) {
        const fabric::TunnelLinkCounters& t = tunnels_.tunnel()->counters(*link);
        out << "  udp sent=" << t.sent << " received=" << t.received << " gaps=" << t.gaps
            << " out_of_order=" << t.out_of_order << " send_errors=" << t.send_errors
            << " not_up=" << t.not_up << " flaps=" << t.flaps << "\n";
      }
    }
  });
  if (const fabric::UdpTunnel* t = tunnels_.tunnel()) {
    const fabric::TunnelDrops& d = t->drops();
    out << "tunnel udp port " << t->port() << " drops: short=" << d.short_datagram
        << " bad_header=" << d.bad_header << " unknown_link=" << d.unknown_link
        << " link_down=" << d.link_down << " wrong_peer=" << d.wrong_peer
        << " bad_vcrc=" << d.bad_vcrc << " bad_icrc=" << d.bad_icrc << " conflicts=" << d.conflicts
        << " own_hellos=" << d.own_hellos << "\n";
  }
  return out.str();
}

std::string FabricCommands::Set(uint32_t cable, const std::vector<std::string>& settings) {
  fabric::LinkFaults faults[2];
  host_.With(
      [&](fabric::Fabric& f) { faults[0] = f.faults(cable, 0), faults[1] = f.faults(cable, 1); });
  int direction = -1;
  for (const std::string& setting : settings) {
    const std::size_t equals = setting.find('=');
    const std::string key = setting.substr(0, equals);
    const std::string text = equals == std::string::npos ? "" : setting.substr(equals + 1);
    if (key == "dir") {
      if (text == "both" || text == "a-b" || text == "b-a") {
        direction = text == "both" ? -1 : text == "a-b" ? 0 : 1;
        continue;
      }
      return Error("dir=" + text + ": not both, a-b or b-a");
    }
    const bool rate = key == "loss" || key == "corrupt" || key == "duplicate" || key == "reorder";
    if (!rate && key != "delay_us")
      return Error("\"" + setting +
                   "\": keys are loss, corrupt, duplicate, reorder, delay_us, dir");
    const auto value = Number(text, rate ? 1000 : 10'000'000);
    if (!value)
      return Error(setting + ": " +
                   (rate ? "a rate per mille, 0..1000" : "microseconds, 0..10000000"));
    for (fabric::LinkFaults& fault : faults) {
      if (key == "loss") fault.loss = static_cast<uint32_t>(*value);
      if (key == "corrupt") fault.corrupt = static_cast<uint32_t>(*value);
      if (key == "duplicate") fault.duplicate = static_cast<uint32_t>(*value);
      if (key == "reorder") fault.reorder = static_cast<uint32_t>(*value);
      if (key == "delay_us") fault.delay_ns = *value * 1000;
    }
  }
  host_.With([&](fabric::Fabric& f) {
    for (int d = 0; d < 2; ++d) {
      if (direction == -1 || direction == d) f.SetFaults(cable, d, faults[d]);
    }
  });
  return "ok\n";
}

std::string FabricCommands::SetCaPresent(fabric::PortRef port, bool present) {
  for (uint32_t c = 0; c < cables_.size(); ++c) {
    const fabric::PortRef* end = cables_[c].port;
    if (cables_[c].end[0].empty() ||
        !((end[0].node == port.node && end[0].port == port.port) ||
          (end[1].node == port.node && end[1].port == port.port)))
      continue;
    std::erase(absent_, c);
    if (!present) absent_.push_back(c);
    return Flap(c, present);
  }
  return Error("no cable at that CA port in this daemon");
}

std::string FabricCommands::Flap(uint32_t cable, bool up) {
  if (up && std::find(absent_.begin(), absent_.end(), cable) != absent_.end())
    return Error("cable " + std::to_string(cable) + " (" + cables_[cable].end[0] +
                 ") has no CA at its end: `add` its host first");
  if (const auto link = tunnels_.LinkOfCable(cable)) {
    tunnels_.SetEnabled(*link, up);  // the tunnel brings the cable down/up with the far end
    return "ok\n";
  }
  std::string error;
  host_.With([&](fabric::Fabric& f) {
    f.SetCableUp(cable, up);
    if (up && static_routes_) error = fabric::ReactivateCable(f, cable);
  });
  return error.empty() ? "ok\n" : Error(error);
}

std::string FabricCommands::Capture(uint32_t cable, const std::string& file) {
  if (file.empty() || file[0] != '/') return Error("capture FILE must be an absolute path");
  if (capture_files_.count(cable))
    return Error("cable already captured to " + capture_files_[cable]);
  capture_files_[cable] = file;
  host_.With([&](fabric::Fabric& f) { f.StartCapture(cable); });
  return "ok\n";
}

std::string FabricCommands::CaptureStop(uint32_t cable) {
  const auto found = capture_files_.find(cable);
  if (found == capture_files_.end())
    return Error("cable " + std::to_string(cable) + " is not captured");
  std::string error;
  std::size_t packets = 0;
  host_.With([&](fabric::Fabric& f) {
    packets = f.captured(cable);
    error = f.WriteCapture(cable, found->second);
    f.StopCapture(cable);
  });
  const std::string file = found->second;
  capture_files_.erase(found);
  if (!error.empty()) return Error(error);
  return "ok\n" + std::to_string(packets) + " packets written to " + file + "\n";
}

}  // namespace softib::softibd
