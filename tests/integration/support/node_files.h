// A user process's first steps on a softibd node: the AL file and the node's first CA (a
// node of a fabric has one), as the integration clients take them.
#pragma once

#include <cstdint>

#include "softib/user/access_layer.h"
#include "user/verbs_ca_proxy.h"

namespace softib::integration {

// Opens the AL of `run_dir` and names its first CA (network order); `*failed` says which
// step did not work.
inline user::Status OpenFirstCa(const char* run_dir, user::AlFile* al, uint64_t* ca_guid_be,
                                const char** failed) {
  user::Status s = user::OpenAl(run_dir, al);
  if (s != user::Status::SUCCESS) {
    *failed = "OpenAl";
    return s;
  }
  uint64_t guids[16] = {};
  abi::GetCaGuidsOut got{};
  s = user::proxy::GetCaGuids(al->device, {al->al}, got, guids);
  if (s == user::Status::SUCCESS && got.num_cas == 0) s = user::Status::INVALID_GUID;
  if (s != user::Status::SUCCESS) {
    *failed = "GetCaGuids";
    return s;
  }
  *ca_guid_be = guids[0];
  return s;
}

}  // namespace softib::integration
