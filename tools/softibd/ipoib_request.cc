#include "ipoib_request.h"

#include <sstream>
#include <stdexcept>

#include "softib/ipoib/link_config.h"

namespace softib::softibd {

std::string ParsePkey(const std::string& text, uint16_t* pkey) {
  unsigned long value = 0;
  try {
    size_t used = 0;
    value = std::stoul(text, &used, 0);
    if (used != text.size()) throw std::invalid_argument(text);
  } catch (const std::exception&) {
    return "bad P_Key \"" + text + "\" (a number such as 0x8001)";
  }
  if (value > 0xFFFF || (value & 0x7FFF) == 0) {
    return "bad P_Key \"" + text +
           "\" (16 bits, a partition number other than 0; 0xffff: the default partition)";
  }
  *pkey = static_cast<uint16_t>(value | 0x8000);
  return "";
}

std::string ParseIpoibUp(const std::vector<std::string>& args, IpoibUp* up) {
  *up = IpoibUp{};
  for (const std::string& arg : args) {
    const size_t eq = arg.find('=');
    if (eq == std::string::npos) return "\"" + arg + "\" is not key=value";
    const std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
    if (key == "name") {
      if (value.empty() || value.size() > 15 || value.find_first_of("/ \t:") != std::string::npos)
        return "bad interface name \"" + value + "\" (1-15 bytes, no '/', ':' or blank)";
      up->name = value;
    } else if (key == "ports") {
      up->ports.clear();
      std::stringstream list(value);
      std::string port;
      while (std::getline(list, port, ',')) {
        if (port != "1" && port != "2") return "bad port \"" + port + "\" (1 or 2)";
        up->ports.push_back(static_cast<uint8_t>(port[0] - '0'));
      }
      if (up->ports.empty() || up->ports.size() > 2 ||
          (up->ports.size() == 2 && up->ports[0] == up->ports[1]))
        return "bad ports \"" + value + "\" (one port, or two different ones for LBFO)";
    } else if (key == "pkey") {
      if (std::string bad = ParsePkey(value, &up->pkey); !bad.empty()) return bad;
    } else if (key == "mode") {
      if (value == "datagram") {
        up->mode = ipoib::Mode::kDatagram;
      } else if (value == "connected") {
        up->mode = ipoib::Mode::kConnected;
      } else {
        return "bad mode \"" + value + "\" (datagram or connected)";
      }
    } else if (key == "lbfo") {
      if (value == "active-standby") {
        up->lbfo = ipoib::LbfoMode::kActiveStandby;
      } else if (value == "balance") {
        up->lbfo = ipoib::LbfoMode::kBalance;
      } else {
        return "bad lbfo \"" + value + "\" (active-standby or balance)";
      }
    } else if (key == "failback") {
      if (value != "on" && value != "off") return "bad failback \"" + value + "\" (on or off)";
      up->failback = value == "on";
    } else if (key == "netns") {
      if (!ipoib::link::NetnsExists(value))
        return "network namespace \"" + value + "\" does not exist (ip netns add " + value + ")";
      up->netns = value;
    } else if (key == "addr") {
      if (std::string bad = ipoib::link::CheckCidr(value); !bad.empty()) return bad;
      up->addrs.push_back(value);
    } else {
      return "unknown key \"" + key + "\" (name ports pkey mode lbfo failback netns addr)";
    }
  }
  return "";
}

}  // namespace softib::softibd
