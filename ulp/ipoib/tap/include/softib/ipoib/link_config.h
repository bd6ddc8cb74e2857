// Configuring a network interface from softibd and the tests: moving it into a network
// namespace, addresses, up/down — by running iproute2's `ip` (one program, its own error
// text), so nothing here enters a namespace itself. Needs CAP_NET_ADMIN (root here).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace softib::ipoib::link {

// Runs `ip ARGS...` and waits for it. False with `error` set to "ip ARGS: <what ip printed>"
// when it fails (or cannot run); `output` gets what it printed on stdout.
bool RunIp(const std::vector<std::string>& args, std::string* error, std::string* output = nullptr);

// A named network namespace exists (ip netns add NAME: /run/netns/NAME).
bool NetnsExists(const std::string& netns);

// "A/LEN" with A an IPv4 or IPv6 address and LEN in range: "" when valid, else why not.
std::string CheckCidr(const std::string& text);
bool IsIpv6Cidr(const std::string& text);

// The interface `ifname` (in the caller's namespace) moves into `netns`, which must exist.
bool MoveToNetns(const std::string& ifname, const std::string& netns, std::string* error);
// In `netns` ("": the caller's): adds an address (IPv6 ones without duplicate address
// detection, so they are usable at once), brings the interface up or down.
bool AddAddress(const std::string& ifname, const std::string& netns, const std::string& cidr,
                std::string* error);
bool SetLinkUp(const std::string& ifname, const std::string& netns, bool up, std::string* error);
bool SetMtu(const std::string& ifname, const std::string& netns, uint32_t mtu, std::string* error);
// Renames the interface (down, as a new one is) in `netns`.
bool Rename(const std::string& ifname, const std::string& netns, const std::string& new_name,
            std::string* error);

}  // namespace softib::ipoib::link
