// The driver behind the generated per-module verb fuzz targets (generated/fuzz/*_fuzz.cc).
// Each input selects one verb of the module and is decoded field by field from the IDL's
// description (fuzz/verb_model.h): enum members most of the time, flags within their mask,
// handles of live objects of the file, lengths around the exact sizes, now and then raw
// bytes. The request goes as an IOCTL from a user-mode file of a booted node through the
// kernel dispatch. Invariants (any violation aborts, which libFuzzer reports):
//   - the status is one the IDL lists for the verb, or INVALID_PARAMETER (UNSUPPORTED only
//     for verbs of a later issue, CANCELED only for waits, which are cancelled);
//   - the output length returned fits the output buffer;
//   - QueryObjectCounts of the file matches the objects the driver saw created/destroyed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace softib::fuzz {

int FuzzVerbs(const char* module, std::span<const uint32_t> ordinals, const uint8_t* data,
              size_t size);

}  // namespace softib::fuzz
