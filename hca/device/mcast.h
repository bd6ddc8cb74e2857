// Multicast attachments (IBA 10.5: UD multicast): which UD QPs of which port hear a group, named
// by its (MGID, MLID). A packet to a multicast LID carries a GRH whose DGID is the MGID and
// DestQP 0xFFFFFF; the port delivers a copy to every QP attached to the group.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <tuple>

#include "softib/abi/types.h"

namespace softib::hca {

inline bool IsMulticastLid(uint16_t lid) { return lid >= 0xC000 && lid != 0xFFFF; }
inline bool IsMulticastGid(const abi::Gid& gid) { return gid.raw[0] == 0xFF; }

class McastTable {
 public:
  using Mgid = std::array<uint8_t, 16>;
  struct Group {
    uint8_t port;
    Mgid mgid;
    uint16_t mlid;
    auto operator<=>(const Group&) const = default;
  };

  // False when the group is new and `max_groups` exist, or the group already holds
  // `max_qps_per_group` QPs; true (and nothing changes) when `qp` is already attached.
  bool Attach(const Group& group, uint32_t qp, uint32_t max_groups, uint32_t max_qps_per_group);
  bool Detach(const Group& group, uint32_t qp);
  void DetachAll(uint32_t qp);
  bool Attached(uint32_t qp) const;
  // The QPs attached to `group`, or nullptr.
  const std::set<uint32_t>* Members(const Group& group) const;
  std::size_t groups() const { return groups_.size(); }
  std::size_t attachments() const { return attachments_; }

 private:
  std::map<Group, std::set<uint32_t>> groups_;
  std::size_t attachments_ = 0;
};

inline McastTable::Mgid ToMgid(const abi::Gid& gid) {
  McastTable::Mgid m;
  std::copy(std::begin(gid.raw), std::end(gid.raw), m.begin());
  return m;
}

}  // namespace softib::hca
