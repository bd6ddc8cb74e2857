// The addresses the host's stack assigns to an interface, as it announces them (rtnetlink
// RTM_NEWADDR / RTM_DELADDR in the interface's network namespace) — what NDIS tells a
// Windows miniport with OID_GEN_NETWORK_LAYER_ADDRESSES. softibd hands each new list to the
// IPoIB driver (SetAddresses: the ATS records and IBAT's address list), so an address added
// later with `ip addr add` or leased by a DHCP client counts as much as one given to
// `softib ipoib up --addr`. IPv6 link-local addresses are left out (every interface has
// fe80::/64: no record or lookup could tell them apart). Needs CAP_SYS_ADMIN to enter a
// namespace other than the caller's (root here).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "softib/ipoib/translate.h"

namespace softib::ipoib {

class AddressWatch {
 public:
  // The interface's complete list of addresses, in the order the host added them.
  using Handler = std::function<void(const std::vector<IpAddr>& addresses)>;

  // Watches `ifname` in the network namespace `netns` ("": the caller's) on a thread of its
  // own, which calls `handler` once with the list at start and after every change. nullptr
  // with `error` set when the namespace, the interface or the netlink socket is not there.
  static std::unique_ptr<AddressWatch> Start(const std::string& ifname, const std::string& netns,
                                             Handler handler, std::string* error);
  ~AddressWatch();  // stops the thread: no handler call after return
  AddressWatch(const AddressWatch&) = delete;
  AddressWatch& operator=(const AddressWatch&) = delete;

 private:
  struct State;
  explicit AddressWatch(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace softib::ipoib
