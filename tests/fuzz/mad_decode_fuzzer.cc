// libFuzzer target for every MAD and packet parser: the bytes are read as a whole
// packet, as a MAD, and as each layout; a second reading drives the text encoder.
// Any crash, sanitizer report or unbounded allocation is a finding.
#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "mad_text.h"
#include "packet_walk.h"
#include "softib/codec/engine.h"
#include "softib/codec/format_desc.h"

namespace {

using softib::madtool::Errors;

void DecodeEverything(std::span<const uint8_t> bytes) {
  std::ostringstream out;
  Errors errors;
  softib::madtool::DecodePacket(out, bytes, &errors);
  errors.clear();
  softib::madtool::DecodeMad(out, bytes, 0, &errors);
  for (const softib::codec::FormatDesc* format : softib::codec::AllFormats()) {
    if (bytes.size() < format->size) continue;
    (void)softib::codec::ValidateBytes(*format, bytes);
    for (const auto& field : softib::codec::DecodeFields(*format, bytes)) {
      out << softib::codec::FormatFieldValue(field);
    }
  }
}

// First byte picks a layout, second a field; the rest is the value text.
void EncodeFromText(std::span<const uint8_t> bytes) {
  const auto formats = softib::codec::AllFormats();
  if (bytes.size() < 2 || formats.empty()) return;
  const softib::codec::FormatDesc& format = *formats[bytes[0] % formats.size()];
  if (format.fields.empty()) return;
  const softib::codec::FieldDesc& field = format.fields[bytes[1] % format.fields.size()];
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + 2), bytes.size() - 2);
  std::vector<uint8_t> buffer(format.size);
  std::string name(field.name);
  if (field.repeat > 1) name += "[" + std::to_string(bytes[1] % (field.repeat + 1)) + "]";
  (void)softib::codec::SetField(format, buffer, name, text);

  softib::madtool::EncodeRequest request;
  request.layout = std::string(format.name);
  request.assignments.push_back(name + "=" + std::string(text));
  Errors errors;
  (void)softib::madtool::Encode(request, &errors);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  DecodeEverything(bytes);
  EncodeFromText(bytes);
  return 0;
}
