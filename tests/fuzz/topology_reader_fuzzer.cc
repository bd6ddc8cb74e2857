// libFuzzer target for the ibnetdiscover topology reader. The bytes are a topology file;
// whatever the reader accepts must survive the writer: read(write(t)) == t, and writing
// that again gives the same text. Any crash, sanitizer report, unbounded allocation or
// broken round trip is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  softib::fabric::ReadResult first = softib::fabric::ReadIbnetdiscover(text, "fuzz");
  if (!first.ok()) {
    if (first.error.empty()) std::abort();  // a failure always says why
    return 0;
  }
  const softib::fabric::WriteResult written = softib::fabric::WriteIbnetdiscover(*first.topology);
  if (!written.ok()) std::abort();  // the reader only returns valid topologies
  softib::fabric::ReadResult second = softib::fabric::ReadIbnetdiscover(written.text, "rewritten");
  if (!second.ok() || !(*second.topology == *first.topology)) std::abort();
  if (softib::fabric::WriteIbnetdiscover(*second.topology).text != written.text) std::abort();
  return 0;
}
