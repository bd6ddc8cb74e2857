// Creates the objects a verb's request names, through one caller (VerbEnv), and fills valid
// requests: the IDL's description of the verb (fuzz/verb_model.h) gives the defaults (enum
// members, handles of live objects, empty trailing arrays) and a short table of per-verb
// values makes them meaningful (sizes, ports, the harness's registered buffer).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "verb_env.h"

namespace softib::conformance {

class FarEnd;

// The state of a CM endpoint a verb's valid request names (MakeCep).
enum class CepStage {
  kReqReceived,      // passive: a REQ from the far end arrived on our listen (the new CEP)
  kSidrReqReceived,  // passive: a SIDR_REQ from the far end (the new CEP)
  kRepReceived,      // active: our REQ to the far end's listen was answered with a REP
  kEstablished,      // active: and we sent the RTU
  kDreqReceived,     // active, established: the far end sent a DREQ
  kLapReceived,      // active, established: the far end proposed an alternate path
};

class ObjectMaker {
 public:
  // `buffer` is memory of this process that MRs register. `ca_guid` is host order.
  ObjectMaker(VerbEnv& env, uint64_t ca_guid, std::span<uint8_t> buffer)
      : env_(env), ca_guid_(ca_guid), buffer_(buffer) {}

  VerbEnv& env() { return env_; }
  // Forgets every object (after the caller's file was reopened).
  void Clear();
  // A live object of `type`: the pinned one, else one made once and reused; 0 on failure.
  uint64_t Get(abi::ObjectType type);
  // A new object of `type`; 0 on failure (last_failure() tells why).
  uint64_t Make(abi::ObjectType type);
  // Destroys through the type's destroying verb.
  bool Destroy(abi::ObjectType type, uint64_t handle);
  // Makes Get(type) return `handle` (the parent of a child to create).
  void Pin(abi::ObjectType type, uint64_t handle) { cache_[type] = handle; }
  // QPs made from now on are UD (multicast needs one) or RC.
  void set_ud_qps(bool ud) { ud_qps_ = ud; }
  void set_alias_qps(bool alias) { alias_qps_ = alias; }
  // The remote side of CM exchanges (null: CM requests name idle endpoints only).
  void set_far_end(FarEnd* far_end) { far_end_ = far_end; }
  // A CM endpoint of this caller in `stage`, reached through an exchange with the far end; 0
  // on failure (last_failure() tells which step).
  uint64_t MakeCep(CepStage stage);

  // A valid request for `verb`. False when a prerequisite could not be made.
  bool Prepare(const VerbInfo& verb, std::vector<uint8_t>& input, uint32_t& output_length);
  // The request with its defaults only (no per-verb values).
  bool Defaults(const VerbInfo& verb, std::vector<uint8_t>& input, uint32_t& output_length);

  // What the last Prepare left null (an exempted object), or "".
  const std::string& missing() const { return missing_; }
  abi::Status last_failure() const { return last_failure_; }
  const char* last_failed_verb() const { return last_failed_verb_; }
  // The first port's LID and GUID (network order), from QueryCa.
  bool PortInfo(uint16_t* lid, uint64_t* port_guid_be);

 private:
  uint64_t Create(abi::ObjectType type);
  uint64_t CreateByVerb(abi::ObjectType type);  // through the first verb that creates it
  // Runs the verb named `name`; records a failure.
  CallResult Run(const char* name, std::span<const uint8_t> input, uint32_t output_length);
  template <typename In>
  CallResult RunTyped(const char* name, const In& in, uint32_t output_length) {
    return Run(name, {reinterpret_cast<const uint8_t*>(&in), sizeof(In)}, output_length);
  }
  void Override(const VerbInfo& verb, std::vector<uint8_t>& input);
  void OverrideCmSa(const VerbInfo& verb, std::vector<uint8_t>& input);
  uint64_t AliasQp(bool fresh = false);  // a GSI alias QP of port 1 (MAD services use one)
  uint64_t PendingSend();                // a MAD send of the cached service awaiting its response
  uint64_t InitQp(abi::QpType type);     // a new QP, an RC one moved to INIT on port 1
  uint64_t AnsweredSaRequest();          // an SA request whose response is there already
  // The next event of `cep` (within 10 s), of type `type`; `new_cep`: the CEP it created.
  bool NextCepEvent(uint64_t cep, abi::CepEventType type, uint64_t* new_cep = nullptr);

  VerbEnv& env_;
  const uint64_t ca_guid_;
  const std::span<uint8_t> buffer_;
  std::map<abi::ObjectType, uint64_t> cache_;
  bool ud_qps_ = false;
  uint64_t alias_qp_ = 0;
  bool alias_qps_ = false;
  FarEnd* far_end_ = nullptr;
  std::set<uint64_t> aliases_;
  bool have_port_ = false;
  uint16_t lid_ = 0;
  uint64_t port_guid_be_ = 0;
  std::string missing_;
  abi::Status last_failure_ = abi::Status::SUCCESS;
  const char* last_failed_verb_ = "";
};

// The conformance suite's exemptions: why a valid call of a verb cannot answer SUCCESS in the
// harness, and why objects of a type cannot be made there (printed by the suite); null for
// what must work. An exempted verb is still called through every path, and its SUCCESS fails
// the suite ("exemption ... is stale"), as does an exempted type the harness can make.
const char* ExemptionOfVerb(uint32_t ordinal);
const char* ExemptionOfObject(abi::ObjectType type);

// The verb whose IOCTL is `code`, or null.
const VerbInfo* FindVerbByIoctl(uint32_t code);

// Byte helpers over a request.
void StoreLe(std::vector<uint8_t>& buf, uint32_t offset, uint32_t size, uint64_t value);
uint64_t LoadLe(std::span<const uint8_t> buf, uint32_t offset, uint32_t size);

}  // namespace softib::conformance
