#include "ipoib_node.h"

#include <arpa/inet.h>

#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "softib/ipoib/ibat_device.h"
#include "softib/ipoib/link_config.h"

namespace softib::softibd {

namespace {

std::string IpoibHex(uint64_t value, int width) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%0*" PRIx64, width, value);
  return text;
}

std::string IpoibMacText(const ipoib::Mac& mac) {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return text;
}

std::string IpoibGidText(const ipoib::Gid& gid) {
  std::string text;
  char group[6];
  for (size_t i = 0; i < gid.size(); i += 2) {
    std::snprintf(group, sizeof group, "%s%02x%02x", i == 0 ? "" : ":", gid[i], gid[i + 1]);
    text += group;
  }
  return text;
}

std::string IpoibHwText(const ipoib::HwAddr& hw) {
  return "qpn " + IpoibHex(hw.qpn, 6) + (hw.connected() ? " C" : "") + " gid " +
         IpoibGidText(hw.gid);
}

const char* IpoibModeName(ipoib::Mode mode) {
  return mode == ipoib::Mode::kConnected ? "connected" : "datagram";
}

std::string IpoibError(const std::string& text) { return "error: " + text + "\n"; }

}  // namespace

bool IpoibNode::Start(kernel::Node* node, const std::string& label, const std::string& dir,
                      std::string* error) {
  label_ = label;
  const kernel::Status status = ipoib::LoadDriver(node, &driver_);
  if (status != kernel::Status::SUCCESS) {
    driver_ = nullptr;
    driver_error_ = std::string("the IPoIB driver did not load on ") + label + " (status " +
                    abi::ToString(status) + ")";
  } else if (!ibat_.Serve(node, dir, ipoib::kIbatDeviceName, error)) {
    return false;
  }
  return control_.Start(
      dir + "/" + kControlName,
      [this](const std::vector<std::string>& args) { return Execute(args); }, error);
}

void IpoibNode::Stop() {
  control_.Stop();
  ibat_.Stop();  // no IBAT request in flight or to come: the device may go with the driver
  {
    std::lock_guard lock(mutex_);
    for (auto& [name, held] : held_) Destroy(held);
    held_.clear();
  }
  if (driver_ != nullptr) ipoib::UnloadDriver(driver_);
  driver_ = nullptr;
}

void IpoibNode::Destroy(Held& held) {
  held.addresses.reset();                                                  // no SetAddresses
  if (held.tap) held.tap->Stop();                                          // no Transmit after this
  if (held.interface != nullptr) ipoib::DestroyInterface(held.interface);  // no face call after
  held.interface = nullptr;
  held.tap.reset();  // the TAP goes, in whichever namespace it is
}

std::string IpoibNode::Execute(const std::vector<std::string>& args) {
  if (args.empty()) return IpoibError("empty request (up, down NAME, show [NAME])");
  const std::string& verb = args[0];
  if (verb == "up") {
    IpoibUp up;
    if (std::string bad = ParseIpoibUp({args.begin() + 1, args.end()}, &up); !bad.empty())
      return IpoibError(bad);
    std::string name;
    if (std::string failed = Up(up, &name); !failed.empty()) return IpoibError(failed);
    std::lock_guard lock(mutex_);
    if (held_.count(name) == 0) return IpoibError(name + " went down meanwhile");
    return "ok\n" + Show(name);
  }
  if (verb == "down") {
    if (args.size() != 2) return IpoibError("down takes 1 argument: NAME");
    return Down(args[1]);
  }
  if (verb == "show") {
    if (args.size() > 2) return IpoibError("show takes at most 1 argument: NAME");
    std::lock_guard lock(mutex_);
    if (args.size() == 2) {
      if (held_.count(args[1]) == 0) return IpoibError("no interface " + args[1] + " on " + label_);
      return "ok\n" + Show(args[1]);
    }
    std::string text = "ok\n";
    for (const auto& [name, held] : held_) text += Show(name);
    return text;
  }
  return IpoibError("unknown request \"" + verb + "\" (up, down NAME, show [NAME])");
}

std::string IpoibNode::Up(const IpoibUp& up, std::string* name) {
  if (driver_ == nullptr) return driver_error_;
  std::lock_guard lock(mutex_);
  if (!up.name.empty() && held_.count(up.name) != 0)
    return "an interface " + up.name + " exists on " + label_;
  std::string error;
  Held held;
  held.config = up;
  ipoib::TapConfig tap;
  // %d: the kernel takes the first free. A name meant for another namespace is given there
  // (a temporary one here, then renamed), so every namespace may have its own "ib0".
  const bool rename = !up.name.empty() && !up.netns.empty();
  tap.name = up.name.empty() ? "ib%d" : rename ? "sibtmp%d" : up.name;
  tap.carrier = false;  // the driver raises it once joined
  held.tap = ipoib::TapFace::Create(tap, &error);
  if (!held.tap) return error;
  ipoib::InterfaceConfig config;
  config.name = rename ? up.name : held.tap->name();
  config.ports = up.ports;
  config.pkey = up.pkey;
  config.mode = up.mode;
  config.lbfo = up.lbfo;
  config.failback = up.failback;
  const kernel::Status status =
      ipoib::CreateInterface(driver_, config, held.tap.get(), &held.interface);
  if (status != kernel::Status::SUCCESS) {
    held.interface = nullptr;
    return "the driver refused the interface (status " + std::string(abi::ToString(status)) + ")";
  }
  std::string ifname = held.tap->name();
  bool ok = held.tap->Configure(ipoib::InterfaceMac(held.interface),
                                ipoib::InterfaceMtu(held.interface), &error);
  ipoib::Interface* interface = held.interface;
  held.tap->Start(
      [interface](std::span<const uint8_t> frame) { ipoib::Transmit(interface, frame); });
  if (ok && !up.netns.empty()) {
    ok = ipoib::link::MoveToNetns(ifname, up.netns, &error);
    if (ok && rename) {
      ok = ipoib::link::Rename(ifname, up.netns, up.name, &error);
      if (ok) ifname = up.name;
    }
  }
  if (ok) held.tap->MovedTo(up.netns, ifname);
  for (size_t i = 0; ok && i < up.addrs.size(); ++i)
    ok = ipoib::link::AddAddress(ifname, up.netns, up.addrs[i], &error);
  if (ok) ok = ipoib::link::SetLinkUp(ifname, up.netns, true, &error);
  if (!ok) {
    Destroy(held);
    return error;
  }
  // The addresses the host's stack announces for the interface from now on (these, `ip addr
  // add` later, a DHCP lease) go to the driver: ATS ServiceRecords with the SA, IBAT's list.
  held.addresses = ipoib::AddressWatch::Start(
      ifname, up.netns,
      [interface](const std::vector<ipoib::IpAddr>& list) { ipoib::SetAddresses(interface, list); },
      &error);
  if (!held.addresses) {
    Destroy(held);
    return error;
  }
  *name = ifname;
  held_.emplace(ifname, std::move(held));
  return "";
}

std::string IpoibNode::Down(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = held_.find(name);
  if (it == held_.end()) return IpoibError("no interface " + name + " on " + label_);
  Destroy(it->second);
  held_.erase(it);
  return "ok\n" + name + " down\n";
}

// Under mutex_.
std::string IpoibNode::Show(const std::string& name) {
  Held& held = held_.at(name);
  ipoib::InterfaceInfo info;
  const kernel::Status status = ipoib::Query(held.interface, &info);
  std::ostringstream out;
  out << name << ": host " << label_;
  if (!held.config.netns.empty()) out << " netns " << held.config.netns;
  for (const std::string& a : held.config.addrs) out << " addr " << a;
  out << "\n";
  if (status != kernel::Status::SUCCESS) {
    out << "  query failed (status " << abi::ToString(status) << ")\n";
    return out.str();
  }
  out << "  mode " << IpoibModeName(info.mode) << " mtu " << info.mtu << " carrier "
      << (info.carrier ? "up" : "down") << " port " << unsigned(info.active_port) << " lid "
      << info.lid << " pkey " << IpoibHex(info.local.pkey, 4) << "\n";
  out << "  " << IpoibHwText(info.local.hw) << " mac " << IpoibMacText(info.local.mac) << "\n";
  if (!info.lbfo_ports.empty()) {
    out << "  lbfo " << (info.lbfo == ipoib::LbfoMode::kBalance ? "balance" : "active-standby")
        << " failback " << (held.config.failback ? "on" : "off") << " moves " << info.lbfo_moves
        << "\n";
    for (const auto& p : info.lbfo_ports) {
      out << "    port " << unsigned(p.port) << " carrier " << (p.carrier ? "up" : "down")
          << (p.active ? " active" : " standby") << " qpn " << IpoibHex(p.qpn, 6) << " tx "
          << p.tx_packets << " rx " << p.rx_packets << "\n";
    }
  }
  out << "  ats " << ipoib::RegisteredAtsRecords(held.interface) << " records\n";
  out << "  groups " << info.groups.size() << "\n";
  for (const ipoib::GroupInfo& g : info.groups) {
    out << "    mgid " << IpoibGidText(g.mgid) << " mlid " << IpoibHex(g.mlid, 4)
        << (g.send_only ? " send-only" : " full") << "\n";
  }
  out << "  neighbours " << info.neighbours.size() << "\n";
  for (const ipoib::Neighbour& n : info.neighbours) {
    out << "    mac " << IpoibMacText(n.mac) << " " << IpoibHwText(n.hw) << " lid " << n.lid
        << "\n";
  }
  const ipoib::Counters& c = info.counters;
  out << "  tx " << c.tx_packets << " packets " << c.tx_bytes << " bytes " << c.tx_dropped
      << " dropped; rx " << c.rx_packets << " packets " << c.rx_bytes << " bytes " << c.rx_dropped
      << " dropped\n";
  out << "  drops";
  for (size_t d = 1; d < c.drops.size(); ++d)
    out << " " << ipoib::DropName(static_cast<ipoib::Drop>(d)) << " " << c.drops[d];
  out << "\n";
  const ipoib::TapCounters t = held.tap->counters();
  out << "  tap from host " << t.from_host_frames << " frames " << t.from_host_bytes
      << " bytes; to host " << t.to_host_frames << " frames " << t.to_host_bytes << " bytes "
      << t.to_host_dropped << " dropped; stops " << t.stops << " wakes " << t.wakes << "\n";
  return out.str();
}

}  // namespace softib::softibd
