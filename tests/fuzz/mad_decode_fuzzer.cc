// libFuzzer target for every MAD and packet parser: the bytes are read as a whole
// packet (by the packet walker in both modes, and by `softib mad decode`), as a MAD, and as
// each layout; a second reading drives the text encoder. Any crash, sanitizer report or
// unbounded allocation is a finding; so is a walk whose offsets leave the packet, or a strict
// and a tolerant walk that disagree.
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
#include "softib/wire/packet_walker.h"

namespace {

using softib::madtool::Errors;
namespace wire = softib::wire;

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// Every header, the payload and the CRCs the walk found lie inside the packet, in order.
void CheckInside(const wire::PacketLayout& l, std::size_t size) {
  std::size_t end = l.icrc != wire::PacketLayout::kNone   ? l.icrc
                    : l.vcrc != wire::PacketLayout::kNone ? l.vcrc
                                                          : size;
  for (std::size_t h = 0; h < wire::kHeaderCount; ++h) {
    const auto header = static_cast<wire::Header>(h);
    if (l.has(header)) Check(l.offset(header) + wire::SizeOf(header) <= end);
  }
  Check(std::size_t{l.payload} + l.payload_bytes <= end);
}

void WalkBothWays(std::span<const uint8_t> bytes) {
  for (const wire::WalkDepth depth : {wire::WalkDepth::kBth, wire::WalkDepth::kAll}) {
    const wire::PacketLayout strict = wire::WalkPacket(bytes, {.depth = depth});
    const wire::PacketLayout tolerant =
        wire::WalkPacket(bytes, {.depth = depth, .mode = wire::WalkMode::kTolerant});
    CheckInside(strict, bytes.size());
    CheckInside(tolerant, bytes.size());
    Check(strict.finding_count <= 1);
    if (strict.ok()) {
      Check(tolerant.ok() && tolerant.at == strict.at && tolerant.opcode == strict.opcode &&
            tolerant.payload == strict.payload && tolerant.payload_bytes == strict.payload_bytes &&
            tolerant.icrc == strict.icrc && tolerant.vcrc == strict.vcrc);
    } else {
      Check(tolerant.problem() == strict.problem() &&
            tolerant.findings[0].header == strict.findings[0].header &&
            tolerant.findings[0].offset == strict.findings[0].offset);
    }
  }
}

void DecodeEverything(std::span<const uint8_t> bytes) {
  WalkBothWays(bytes);
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
