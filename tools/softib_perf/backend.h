// The verbs one side of a test needs, whoever runs them: a user process talking to a
// softibd (control verbs through the channel, the speed path on mapped rings) or a kernel
// client of an in-process node (direct calls). The request and answer structures are the
// ABI's either way, so the endpoint (endpoint.h) is written once.
#pragma once

#include <endian.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "softib/abi/types.h"
#include "softib/abi/verbs_ca.h"
#include "softib/abi/verbs_cq.h"
#include "softib/abi/verbs_mr_mw.h"
#include "softib/abi/verbs_pd_av.h"
#include "softib/abi/verbs_qp.h"

namespace softib::perf {

using abi::Status;

// The CA a side takes when -d names none: the `default_index`-th of the node's `guids`
// (GetCaGuids' answer, network order), or the only one — a node of a fabric has one CA,
// and both sides then use theirs. Host order; 0 with `error` set when the node has too few.
inline uint64_t DefaultCa(std::span<const uint64_t> guids, uint32_t num_cas, int default_index,
                          std::string* error) {
  if (num_cas == 1) default_index = 0;
  if (num_cas <= static_cast<uint32_t>(default_index) || guids.size() <= num_cas - 1) {
    *error = "the node has " + std::to_string(num_cas) + " CA(s); give one with -d";
    return 0;
  }
  return be64toh(guids[static_cast<std::size_t>(default_index)]);
}

class Backend {
 public:
  virtual ~Backend() = default;

  // Opens the CA whose GUID (host order) is `guid`, or with 0 the `default_index`-th CA of
  // the node (the server takes the first, the client the second: the pair cabled together).
  virtual Status OpenCa(uint64_t guid, int default_index, std::string* error) = 0;
  virtual abi::Handle<abi::ObjectType::Ca> ca() const = 0;
  virtual uint64_t ca_guid() const = 0;  // host order

  virtual Status QueryCa(abi::QueryCaOut* out, std::span<abi::PortAttributes> ports) = 0;
  virtual Status AllocPd(const abi::AllocPdIn& in, abi::AllocPdOut* out) = 0;
  virtual Status DeallocPd(const abi::DeallocPdIn& in) = 0;
  virtual Status RegMem(const abi::RegMemIn& in, abi::RegMemOut* out) = 0;
  virtual Status DeregMr(const abi::DeregMrIn& in) = 0;
  virtual Status CreateCq(const abi::CreateCqIn& in, abi::CreateCqOut* out) = 0;
  virtual Status DestroyCq(const abi::DestroyCqIn& in) = 0;
  virtual Status CreateQp(const abi::CreateQpIn& in, abi::CreateQpOut* out) = 0;
  virtual Status ModifyQp(const abi::ModifyQpIn& in) = 0;
  virtual Status DestroyQp(const abi::DestroyQpIn& in) = 0;
  virtual Status CreateAv(const abi::CreateAvIn& in, abi::CreateAvOut* out) = 0;
  virtual Status DestroyAv(const abi::DestroyAvIn& in) = 0;

  // Makes the speed path of `qp` and `cq` usable (a user process maps their rings; a
  // kernel client calls the HCA directly and has nothing to do).
  virtual Status MapRings(abi::Handle<abi::ObjectType::Cq> cq,
                          abi::Handle<abi::ObjectType::Qp> qp) = 0;
  // The speed path (after MapRings).
  virtual Status PostSend(std::span<const abi::SendWorkRequest> wrs, uint32_t* posted) = 0;
  virtual Status PostRecv(std::span<const abi::RecvWorkRequest> wrs, uint32_t* posted) = 0;
  // NOT_FOUND when the CQ is empty.
  virtual Status PollCq(std::span<abi::WorkCompletion> wcs, uint32_t* count) = 0;
  // Called after an empty poll: gives the CPU away (or not, with busy polling) for a while.
  virtual void Idle() = 0;

  // Closes the CA and whatever the backend opened (objects must be destroyed first).
  virtual void Close() = 0;
};

// A user process against the node in `run_dir` ("" : the default node), through softibd.
std::unique_ptr<Backend> MakeUserBackend(const std::string& run_dir, bool busy_poll);

}  // namespace softib::perf
