// Packets built with the generated codecs, written to an ERF capture (record
// type 21) and decoded by tshark, a decoder nobody here wrote: every field
// tshark prints must equal the value we encoded, and tshark must report no
// malformed packet or warning. Fails (never skips) when tshark is missing.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "ib_packets.h"
#include "softib/wire/capture_file.h"
#include "softib/wire/hex.h"

namespace softib::interop {
namespace {

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  out.push_back(std::move(cur));
  return out;
}

std::optional<uint64_t> ParseNumber(const std::string& text) {
  if (text == "True") return 1;
  if (text == "False") return 0;
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  const uint64_t v = std::strtoull(text.c_str(), &end, 0);
  if (*end != '\0') return std::nullopt;
  return v;
}

std::string Describe(const Expect& e) {
  switch (e.kind) {
    case Expect::Kind::kNumber: {
      char buf[40];
      std::snprintf(buf, sizeof buf, "0x%llx (%llu)", static_cast<unsigned long long>(e.number),
                    static_cast<unsigned long long>(e.number));
      return buf;
    }
    case Expect::Kind::kBytes:
    case Expect::Kind::kIpv6:
      return hex::Format(e.bytes);
    case Expect::Kind::kText:
      return e.text;
  }
  return "";
}

// True when tshark's text for one occurrence shows the expected value.
bool Matches(const Expect& e, const std::string& got) {
  switch (e.kind) {
    case Expect::Kind::kNumber:
      return ParseNumber(got) == e.number;
    case Expect::Kind::kBytes: {
      // tshark repeats some byte items (ImmDt, IETH) and splits others in
      // pieces (ServiceData8/16/32/64): each repeat, or all pieces joined, must match.
      const auto same = [&](const std::string& text) {
        std::string digits;
        for (char c : text)
          if (c != ':' && c != ',') digits.push_back(c);
        std::vector<uint8_t> bytes;
        return hex::Parse(digits, &bytes).empty() && bytes == e.bytes;
      };
      const auto pieces = Split(got, ',');
      return same(got) || std::all_of(pieces.begin(), pieces.end(), same);
    }
    case Expect::Kind::kIpv6: {
      uint8_t addr[16];
      return inet_pton(AF_INET6, got.c_str(), addr) == 1 &&
             std::vector<uint8_t>(addr, addr + 16) == e.bytes;
    }
    case Expect::Kind::kText:
      return got == e.text;
  }
  return false;
}

class TsharkInterop : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/softib-tshark-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty() && !::testing::Test::HasFailure()) std::filesystem::remove_all(dir_);
  }

  // Lines of `command`'s standard output.
  static std::vector<std::string> Lines(const std::string& command) {
    std::vector<std::string> lines;
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
    if (!pipe) return lines;
    std::string line;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, pipe.get()) != nullptr) {
      line += buf;
      if (line.back() == '\n') {
        line.pop_back();
        lines.push_back(std::move(line));
        line.clear();
      }
    }
    return lines;
  }

  // Options turning off the protocols tshark tries heuristically on InfiniBand
  // payloads and CM private data (RPC-over-RDMA, iSER, SDP...): our test
  // payloads are arbitrary bytes, and a heuristic misfiring on them would say
  // nothing about our headers. (Heuristic short names are not listed by tshark,
  // so the protocols themselves are disabled.)
  std::string NoPayloadHeuristics() {
    std::string options;
    for (const std::string& line :
         Lines("HOME=" + dir_ + " tshark -G heuristic-decodes 2>/dev/null")) {
      const auto cols = Split(line, '\t');
      if (cols.size() >= 2 && cols[0].rfind("infiniband", 0) == 0)
        options += " --disable-protocol " + cols[1];
    }
    return options;
  }

  // Runs tshark over `capture`, one output line per packet, one column per field.
  std::vector<std::vector<std::string>> RunTshark(const std::string& capture,
                                                  const std::vector<std::string>& fields) {
    std::string cmd = "HOME=" + dir_ + " tshark -n -r " + capture + NoPayloadHeuristics() +
                      " -T fields -E separator=/t -E occurrence=a -E aggregator=,";
    for (const auto& f : fields) cmd += " -e " + f;
    cmd += " 2>" + dir_ + "/tshark.err";
    std::vector<std::vector<std::string>> rows;
    for (const std::string& line : Lines(cmd)) rows.push_back(Split(line, '\t'));
    return rows;
  }

  std::string dir_;
};

TEST_F(TsharkInterop, TsharkIsInstalled) {
  ASSERT_EQ(std::system("tshark -v >/dev/null 2>&1"), 0)
      << "tshark is required (apt-get install tshark; scripts/install-deps.sh installs it)";
}

TEST_F(TsharkInterop, EveryFieldMatches) {
  ASSERT_EQ(std::system("tshark -v >/dev/null 2>&1"), 0) << "tshark is required";
  const std::vector<TestPacket> packets = AllTestPackets();
  std::vector<capture::CapturedPacket> records;
  for (std::size_t i = 0; i < packets.size(); ++i)
    records.push_back(
        {static_cast<uint64_t>(i + 1) << 32, capture::kErfTypeInfiniband, packets[i].bytes});
  const std::string erf = dir_ + "/packets.erf";
  ASSERT_EQ(capture::WriteErfFile(erf, records), "");

  // Columns: health checks first, then every field any packet expects.
  std::vector<std::string> fields = {"frame.protocols", "_ws.malformed", "_ws.expert.severity",
                                     "_ws.expert.message"};
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < fields.size(); ++i) column[fields[i]] = i;
  for (const auto& p : packets)
    for (const auto& e : p.expects)
      if (column.emplace(e.field, fields.size()).second) fields.push_back(e.field);

  const auto rows = RunTshark(erf, fields);
  ASSERT_EQ(rows.size(), packets.size())
      << "tshark printed a line per packet? (see " << dir_ << "/tshark.err)";
  std::size_t compared = 0;
  for (std::size_t i = 0; i < packets.size(); ++i) {
    const TestPacket& p = packets[i];
    const auto& row = rows[i];
    SCOPED_TRACE("packet " + std::to_string(i + 1) + " " + p.name);
    ASSERT_EQ(row.size(), fields.size());
    EXPECT_NE(row[0].find("infiniband"), std::string::npos) << "protocols: " << row[0];
    EXPECT_EQ(row[1], "") << "tshark marks the packet malformed";
    // Expert severities: 0x00600000 warning, 0x00800000 error.
    for (const auto& sev : Split(row[2], ',')) {
      const auto s = ParseNumber(sev);
      EXPECT_TRUE(sev.empty() || (s && *s < 0x00600000))
          << "tshark expert info " << sev << ": " << row[3];
    }
    for (const Expect& e : p.expects) {
      const std::string& got = row[column[e.field]];
      if (got.empty() && e.optional) continue;
      EXPECT_FALSE(got.empty()) << e.field << " missing; expected " << Describe(e);
      if (got.empty()) continue;
      // A byte field tshark shows in pieces (ServiceData8/16/32/64) is compared whole.
      const std::vector<std::string> occurrences =
          e.kind == Expect::Kind::kBytes ? std::vector<std::string>{got} : Split(got, ',');
      for (const auto& occurrence : occurrences)
        EXPECT_TRUE(Matches(e, occurrence))
            << e.field << ": tshark shows " << got << ", we encoded " << Describe(e);
      ++compared;
    }
  }
  EXPECT_GT(compared, 400u) << "too few fields compared";
  std::printf("[ tshark  ] %zu packets, %zu field values compared\n", packets.size(), compared);
}

}  // namespace
}  // namespace softib::interop
