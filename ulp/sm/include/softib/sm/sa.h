// The Subnet Administrator (IBA chapter 15): class 0x03 (SubnAdm) answered from the SM's
// subnet model. Get answers one record (ERR_NO_RECORDS / ERR_TOO_MANY_RECORDS otherwise),
// GetTable every record that matches: a record matches when every field whose ComponentMask
// bit is set equals the request's field, the others are ignored (15.2.4). Set and Delete
// exist where the record allows them (ServiceRecord, MCMemberRecord, InformInfo).
//
// The GetTable answer is an RMPP transfer of every record when the transport does RMPP
// (set_rmpp_limit: the AL's MAD services segment it); otherwise one MAD: as many whole records
// as fit the 200 bytes of SAData, with an RMPP header saying "first and last segment", because
// ibsim's transport (umad2sim) carries 256-byte MADs and nothing reassembles them; README.md.
//
// No I/O here: Handle() turns a request MAD into the MADs to send back, so the unit tests
// drive the SA with byte vectors and a subnet built from a fabric::Topology.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "softib/mad/mad_sa.h"
#include "softib/sm/mad_port.h"
#include "softib/sm/subnet.h"

namespace softib::sm {

inline constexpr uint8_t kClassSubnAdm = 0x03;
inline constexpr uint8_t kSaClassVersion = 2;

inline constexpr uint8_t kSaMethodGet = 0x01;
inline constexpr uint8_t kSaMethodSet = 0x02;
inline constexpr uint8_t kSaMethodReport = 0x06;
inline constexpr uint8_t kSaMethodGetTable = 0x12;
inline constexpr uint8_t kSaMethodGetMulti = 0x14;
inline constexpr uint8_t kSaMethodDelete = 0x15;
inline constexpr uint8_t kSaResponse = 0x80;  // R bit

inline constexpr uint16_t kSaAttrClassPortInfo = 0x0001;
inline constexpr uint16_t kSaAttrNotice = 0x0002;
inline constexpr uint16_t kSaAttrInformInfo = 0x0003;

inline constexpr std::size_t kSaHeaderBytes = 56;  // common + RMPP + SA headers
inline constexpr std::size_t kSaDataBytes = 200;

// The MAD Status of an SA response: general codes in bits 4..2, SA codes in bits 15..8.
inline constexpr uint16_t kSaStatusOk = 0x0000;
inline constexpr uint16_t kMadStatusBadVersion = 0x0004;
inline constexpr uint16_t kMadStatusMethodUnsupported = 0x0008;
inline constexpr uint16_t kMadStatusAttributeUnsupported = 0x000C;
inline constexpr uint16_t kMadStatusInvalidValue = 0x001C;
inline constexpr uint16_t kSaStatusNoResources = 0x0100;
inline constexpr uint16_t kSaStatusReqInvalid = 0x0200;
inline constexpr uint16_t kSaStatusNoRecords = 0x0300;
inline constexpr uint16_t kSaStatusTooManyRecords = 0x0400;
inline constexpr uint16_t kSaStatusInvalidGid = 0x0500;
inline constexpr uint16_t kSaStatusInsufficientComponents = 0x0600;
inline constexpr uint16_t kSaStatusDenied = 0x0700;

using Gid = std::array<uint8_t, 16>;
Gid MakeGid(uint64_t prefix, uint64_t guid);
uint64_t GidPrefix(const Gid& gid);
uint64_t GidGuid(const Gid& gid);

// One request as the record families see it.
struct SaRequest {
  uint8_t method = kSaMethodGet;
  uint16_t attribute = 0;
  uint32_t modifier = 0;
  uint64_t component_mask = 0;
  std::span<const uint8_t> data;  // SAData (200 bytes)
  uint16_t requester_lid = 0;     // the request's SLID
  uint32_t requester_qpn = 1;
  double now = 0;  // seconds, for leases
  // Families whose records are costly (PathRecord: an LFT walk each) stop after this many;
  // Handle() asks for one more than a MAD carries, so a cut answer is still known as cut.
  std::size_t max_records = SIZE_MAX;
};

struct SaResult {
  uint16_t status = kSaStatusOk;
  std::size_t record_size = 0;  // the attribute's own size; AttributeOffset rounds it up
  std::vector<std::vector<uint8_t>> records;
  void Add(std::span<const uint8_t> record) { records.emplace_back(record.begin(), record.end()); }
};

// A MAD the SA sends on its own (a Report(Notice) to an InformInfo subscriber).
struct SaOutgoing {
  MadBytes mad{};
  MadAddress to;
  // Non-empty: send this RMPP transfer (headers, then the records) instead of `mad`.
  std::vector<uint8_t> transfer;
};

struct SaStats {
  uint64_t requests = 0;
  uint64_t errors = 0;            // answered with a non-zero status
  uint64_t truncated_tables = 0;  // GetTable answers cut to one MAD
  uint64_t records_dropped = 0;   // records left out of those answers
  uint64_t rmpp_tables = 0;       // GetTable answers sent as RMPP transfers
  uint64_t tables_too_large = 0;  // refused (ERR_NO_RESOURCES): beyond the RMPP limit
};

class SubnetAdmin {
 public:
  // The subnet the SA answers from (the SM's model after a sweep); null: none yet.
  void set_subnet(const Subnet* subnet);
  const Subnet* subnet() const { return subnet_; }
  // The SM's subnet prefix: the GIDs of ports whose PortInfo:GIDPrefix the model lacks (0).
  void set_subnet_prefix(uint64_t prefix) { subnet_prefix_ = prefix; }
  // The largest RMPP transfer the transport carries (MadPort::MaxRmppBytes); 0: one MAD.
  void set_rmpp_limit(std::size_t bytes) { rmpp_limit_ = bytes >= kSaHeaderBytes ? bytes : 0; }

  // One MAD of class 0x03 received from `from`; the MADs to send back (none for responses,
  // RMPP ACKs and unknown methods of responses).
  std::vector<SaOutgoing> Handle(const MadBytes& request, const MadAddress& from, double now);

  // The record families, without the MAD around them (unit tests call this directly).
  SaResult Query(const SaRequest& request);

  // After a sweep: compares the end ports of `before` with those of the current subnet and
  // builds Report(Notice) MADs, trap 64 (GID in service) and 65 (GID out of service), for the
  // subscribers that asked for them.
  std::vector<SaOutgoing> NoticesForChanges(const Subnet& before);
  // A trap the SM received (the 64-byte SmpNotice of its SubnTrap): a Report(Notice) with the
  // issuer's GID added for every subscriber whose InformInfo matches it.
  std::vector<SaOutgoing> ForwardTrap(std::span<const uint8_t> smp_notice);

  // The end port that owns a port GUID (switch: node GUID, port 0).
  std::optional<EndPort> PortByGuid(uint64_t guid) const;
  // The end port a GID names: its GUID's port, if the prefix is the one that port holds or
  // the link-local fe80:: (a GID with another subnet's prefix, an SM's before a handover,
  // names no port here).
  std::optional<EndPort> PortByGid(const Gid& gid) const;
  Gid GidOf(const EndPort& port) const;
  uint64_t GuidOf(const EndPort& port) const;
  uint16_t LidOf(const EndPort& port) const;

  const SaStats& stats() const { return stats_; }

  // Registered services (ServiceRecord bytes) and their expiry (seconds; <0 = never).
  struct Service {
    mad::ServiceRecord record;
    double expires = -1;
  };
  // Multicast groups: the group's parameters and its members' join states.
  struct McGroup {
    mad::MCMemberRecord params;      // MGID, MLID, Q_Key, P_Key, MTU, Rate, SL, ... (no PortGID)
    std::map<Gid, uint8_t> members;  // PortGID -> JoinState bits
    std::map<Gid, bool> proxy;
    bool permanent = false;  // created by the SM (IPoIB broadcast): stays without members
  };
  struct Subscription {
    mad::InformInfo info;
    Gid subscriber{};
    uint16_t lid = 0;
    uint32_t qpn = 1;
  };
  const std::vector<Service>& services() const { return services_; }
  const std::map<Gid, McGroup>& groups() const { return groups_; }
  // A group the SM creates itself (MLID 0: the next free one); returns its MLID.
  uint16_t AddGroup(const mad::MCMemberRecord& params);
  // Every group's member ports by MLID, for the multicast trees (sa_mcast.cc).
  std::map<uint16_t, std::vector<EndPort>> McastMembers() const;
  // Counts joins and leaves, so the SM knows when to reprogram the MFTs.
  uint64_t mcast_changes() const { return mcast_changes_; }
  const std::vector<Subscription>& subscriptions() const { return subscriptions_; }

 private:
  SaResult ClassPortInfo(const SaRequest& r);
  SaResult Services(const SaRequest& r);
  SaResult McMembers(const SaRequest& r);
  SaResult Inform(const SaRequest& r);
  SaResult InformRecords(const SaRequest& r);
  void ExpireServices(double now);
  // Report(Notice) MADs of `notice` for the matching subscriptions; `subject_*`: the port the
  // notice is about (matched against the subscriptions' GID or LID range).
  std::vector<SaOutgoing> ReportsFor(const mad::Notice& notice, const Gid& subject_gid,
                                     uint16_t subject_lid);
  // A GetTable/GetMulti answer as one RMPP transfer (sa_rmpp.cc).
  void AnswerByRmpp(SaOutgoing& reply, SaResult& result, std::size_t stride);
  // The GID prefix of a port: what its PortInfo holds, else the SM's.
  uint64_t PrefixOf(const SmPort& port) const {
    return port.info.GIDPrefix ? port.info.GIDPrefix : subnet_prefix_;
  }

  const Subnet* subnet_ = nullptr;
  std::size_t rmpp_limit_ = 0;
  uint64_t subnet_prefix_ = kDefaultSubnetPrefix;
  std::unordered_map<uint64_t, EndPort> by_guid_;
  std::vector<Service> services_;
  std::map<Gid, McGroup> groups_;
  uint16_t next_mlid_ = 0xC000;
  uint64_t mcast_changes_ = 0;
  std::vector<Subscription> subscriptions_;
  uint16_t notice_count_ = 0;
  SaStats stats_;
};

}  // namespace softib::sm
