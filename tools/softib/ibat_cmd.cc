#include "ibat_cmd.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <thread>
#include <vector>

#include "softib/abi/ibat.h"
#include "softib/mad/mad_sa.h"
#include "softib/user/ibat.h"

namespace softib::ibattool {

namespace {

using user::Status;

constexpr auto kAskAgainEvery = std::chrono::milliseconds(20);

std::string Hex(uint64_t value, int width) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%0*" PRIx64, width, value);
  return text;
}

// As `softib ipoib show` prints GIDs and MACs.
std::string GidText(const uint8_t* gid) {
  std::string text;
  char group[6];
  for (int i = 0; i < 16; i += 2) {
    std::snprintf(group, sizeof group, "%s%02x%02x", i == 0 ? "" : ":", gid[i], gid[i + 1]);
    text += group;
  }
  return text;
}

std::string MacText(const uint8_t* mac) {
  char text[18];
  std::snprintf(text, sizeof text, "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return text;
}

// The PathRecord's MTU and Rate codes (IBA 15.2.5.16, 9.7.2 / 14.2.5.6).
const char* MtuName(uint8_t mtu) {
  static constexpr const char* kNames[] = {"?", "256", "512", "1024", "2048", "4096"};
  return mtu < std::size(kNames) ? kNames[mtu] : "?";
}

const char* RateName(uint8_t rate) {
  static constexpr const char* kNames[] = {"?",       "?",       "2.5 Gb/s", "10 Gb/s",
                                           "30 Gb/s", "5 Gb/s",  "20 Gb/s",  "40 Gb/s",
                                           "60 Gb/s", "80 Gb/s", "120 Gb/s"};
  return rate < std::size(kNames) ? kNames[rate] : "?";
}

int Fail(int code, const std::string& message) {
  std::cerr << "softib: error: " << message << "\n";
  return code;
}

int Open(const std::string& run_dir, user::DeviceHandle* device) {
  const Status s = user::OpenIbat(run_dir, device);
  if (s == Status::SUCCESS) return 0;
  return Fail(1, "no IBAT device at " + run_dir + "/ibat (is softibd running there, with the " +
                     "IPoIB driver on that node?): " + abi::ToString(s));
}

int Ips(const IbatCli& cli) {
  user::DeviceHandle device = nullptr;
  if (int rc = Open(cli.run_dir, &device); rc != 0) return rc;
  std::vector<abi::IbatAddressEntry> entries;
  uint32_t total = 0;
  const Status s = user::IbatGetIpList(device, cli.port_guid, &entries, &total);
  user::CloseDevice(device);
  if (s != Status::SUCCESS) return Fail(1, std::string("IbatGetIpList: ") + abi::ToString(s));
  for (const abi::IbatAddressEntry& e : entries) {
    std::cout << user::IbatIpText(e.address) << " gid " << GidText(e.gid.raw) << " pkey "
              << Hex(e.pkey, 4) << " port " << unsigned(e.port) << " port_guid "
              << Hex(e.port_guid, 16) << " ca_guid " << Hex(e.ca_guid, 16) << "\n";
  }
  std::cout << entries.size() << " of " << total << " addresses\n";
  return 0;
}

int Resolve(const IbatCli& cli) {
  abi::IbatIpAddress remote{}, local{};
  if (!user::ParseIbatIp(cli.dst, &remote)) {
    return Fail(2, "\"" + cli.dst + "\" is not an IPv4 or IPv6 address");
  }
  if (cli.src.empty()) {
    local.family = remote.family;  // the unspecified address: any interface
  } else if (!user::ParseIbatIp(cli.src, &local)) {
    return Fail(2, "--src \"" + cli.src + "\" is not an IPv4 or IPv6 address");
  }
  user::DeviceHandle device = nullptr;
  if (int rc = Open(cli.run_dir, &device); rc != 0) return rc;
  abi::IbatResolveOut path{};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(cli.wait_ms);
  Status s = Status::PENDING;
  int asked = 0;
  // The driver answers PENDING while its ARP/ND request or path query is out, and TIMEOUT
  // itself after its tries; the deadline only bounds a driver that never concludes.
  while (true) {
    s = user::IbatResolve(device, local, remote, &path);
    ++asked;
    if (s != Status::PENDING || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(kAskAgainEvery);
  }
  user::CloseDevice(device);
  const std::string what = cli.dst + (cli.src.empty() ? "" : " from " + cli.src);
  switch (s) {
    case Status::SUCCESS:
      break;
    case Status::PENDING:
      return Fail(3, what + ": still resolving after " + std::to_string(cli.wait_ms) + " ms");
    case Status::TIMEOUT:
      return Fail(3, what + ": TIMEOUT (nobody answered the ARP/neighbour requests, or the SA " +
                         "gave no path)");
    case Status::NOT_FOUND:
      return Fail(3, what + ": NOT_FOUND (no interface " +
                         (cli.src.empty() ? std::string("with a carrier") : "holds " + cli.src) +
                         ")");
    case Status::INVALID_PARAMETER:
      return Fail(2, what + ": INVALID_PARAMETER (unspecified, multicast or broadcast address)");
    default:
      return Fail(1, what + ": " + abi::ToString(s));
  }
  mad::PathRecord pr;
  pr.Unpack(std::span<const uint8_t>(path.path_record, sizeof path.path_record));
  std::cout << cli.dst << " asked " << asked << "\n";
  std::cout << "  sgid " << GidText(path.sgid.raw) << "\n";
  std::cout << "  dgid " << GidText(path.dgid.raw) << "\n";
  std::cout << "  pkey " << Hex(path.pkey, 4) << " qpn " << Hex(path.remote_qpn, 6) << " mac "
            << MacText(path.remote_mac) << "\n";
  std::cout << "  path dlid " << pr.DLID << " slid " << pr.SLID << " mtu " << unsigned(pr.MTU)
            << " (" << MtuName(pr.MTU) << ") rate " << unsigned(pr.Rate) << " ("
            << RateName(pr.Rate) << ") sl " << unsigned(pr.SL) << " pkey " << Hex(pr.P_Key, 4)
            << " dgid " << GidText(pr.DGID.data()) << "\n";
  return 0;
}

}  // namespace

void AddIbatCommand(CLI::App& app, IbatCli& cli) {
  cli.ibat = app.add_subcommand(
      "ibat", "IP address translation of a running softibd's node (IPoIB's IBAT): ips | resolve");
  cli.ibat->require_subcommand(1);
  const char* run_dir_help =
      "the node's directory: softibd's run directory, or <run-dir>/<host> of softibd --fabric";
  cli.ips = cli.ibat->add_subcommand("ips", "the addresses of the node's IPoIB interfaces");
  cli.ips->add_option("--run-dir", cli.run_dir, run_dir_help)->required();
  cli.ips->add_option("--port-guid", cli.port_guid, "only the interfaces of this port GUID");
  cli.resolve = cli.ibat->add_subcommand(
      "resolve", "how to reach an IP address over InfiniBand: GID, P_Key, QPN, MAC and path");
  cli.resolve->add_option("--run-dir", cli.run_dir, run_dir_help)->required();
  cli.resolve->add_option("--src", cli.src, "through the interface holding this address");
  cli.resolve->add_option("--wait-ms", cli.wait_ms, "ask again while resolving, this long")
      ->check(CLI::Range(0, 60000));
  cli.resolve->add_option("address", cli.dst, "the IPv4 or IPv6 address")->required();
}

int RunIbatCommand(const IbatCli& cli) {
  if (cli.ips->parsed()) return Ips(cli);
  return Resolve(cli);
}

}  // namespace softib::ibattool
