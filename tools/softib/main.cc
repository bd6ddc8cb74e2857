// softib: the command-line tool.
//   softib mad decode [--hex HEX | --file F | --erf F | --pcap F] [--layout NAME] [--packet]
//   softib mad encode --layout NAME [Field=value ...] [--class C --method M --attr-mod N --tid T]
//                     [--out F | --erf F]
//   softib mad list
//   softib topology gen|default|preset|check ...   (topology_cmd.h)
//   softib fabric --run-dir D links|set|down|up|capture|capture-stop ...   (fabric_cmd.h)
//   softib ipoib up|down|show --run-dir D ...   (ipoib_cmd.h)
//   softib ibat ips|resolve --run-dir D ...     (ibat_cmd.h)
// Bad input gets one line on stderr ("softib: error: ...") and exit code 2.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "fabric_cmd.h"
#include "ibat_cmd.h"
#include "ipoib_cmd.h"
#include "mad_text.h"
#include "packet_walk.h"
#include "softib/wire/capture_file.h"
#include "softib/wire/hex.h"
#include "topology_cmd.h"

namespace {

using softib::madtool::Errors;

constexpr int kBadInput = 2;

int Fail(const Errors& errors) {
  for (const std::string& e : errors) std::cerr << "softib: error: " << e << "\n";
  return errors.empty() ? 0 : kBadInput;
}

int Fail(const std::string& error) { return Fail(Errors{error}); }

struct DecodeArgs {
  std::optional<std::string> hex, file, erf, pcap, layout;
  bool packet = false;
};

int RunDecode(const DecodeArgs& args) {
  const int inputs =
      args.hex.has_value() + args.file.has_value() + args.erf.has_value() + args.pcap.has_value();
  if (inputs != 1) return Fail("give exactly one input: --hex, --file, --erf or --pcap");

  std::vector<softib::capture::CapturedPacket> captured;
  std::vector<uint8_t> bytes;
  if (args.hex) {
    std::string text = *args.hex;
    if (text == "-") text.assign(std::istreambuf_iterator<char>(std::cin), {});
    if (std::string e = softib::hex::Parse(text, &bytes); !e.empty()) return Fail("--hex: " + e);
  } else if (args.file) {
    if (std::string e = softib::capture::ReadFile(*args.file, &bytes); !e.empty()) return Fail(e);
  } else {
    std::vector<uint8_t> data;
    const std::string& path = args.erf ? *args.erf : *args.pcap;
    if (std::string e = softib::capture::ReadFile(path, &data); !e.empty()) return Fail(e);
    const std::string e = args.erf ? softib::capture::ParseErf(data, &captured)
                                   : softib::capture::ParsePcap(data, &captured);
    if (!e.empty()) return Fail(path + ": " + e);
    if (captured.empty()) return Fail(path + ": no packets");
  }

  Errors errors;
  if (!captured.empty()) {
    if (args.layout) return Fail("--layout applies to --hex/--file input, not to captures");
    for (std::size_t i = 0; i < captured.size(); ++i) {
      std::cout << "== packet " << i + 1 << " ==\n";
      if (captured[i].erf_type != softib::capture::kErfTypeInfiniband) {
        errors.push_back("packet " + std::to_string(i + 1) + ": ERF type " +
                         std::to_string(captured[i].erf_type) + " is not InfiniBand (21)");
        continue;
      }
      Errors packet_errors;
      softib::madtool::DecodePacket(std::cout, captured[i].bytes, &packet_errors);
      for (auto& e : packet_errors) errors.push_back("packet " + std::to_string(i + 1) + ": " + e);
    }
    return Fail(errors);
  }
  if (bytes.empty()) return Fail("no bytes to decode");
  if (args.layout) {
    if (args.packet) return Fail("--layout and --packet exclude each other");
    const auto* desc = softib::madtool::FindLayout(*args.layout, &errors);
    if (desc != nullptr) softib::madtool::DecodeAs(std::cout, *desc, bytes, &errors);
  } else if (args.packet) {
    softib::madtool::DecodePacket(std::cout, bytes, &errors);
  } else {
    softib::madtool::DecodeMad(std::cout, bytes, 0, &errors);
  }
  return Fail(errors);
}

struct EncodeArgs {
  softib::madtool::EncodeRequest request;
  std::optional<std::string> out, erf;
  softib::madtool::MadPacketOptions packet;
};

int RunEncode(const EncodeArgs& args) {
  Errors errors;
  const auto bytes = softib::madtool::Encode(args.request, &errors);
  if (!bytes) return Fail(errors);
  if (args.erf) {
    if (bytes->size() != softib::madtool::kMadSize)
      return Fail("--erf wraps a MAD into a packet; " + args.request.layout +
                  " is not an attribute");
    const auto packet = softib::madtool::BuildMadPacket(*bytes, args.packet, &errors);
    if (!errors.empty()) return Fail(errors);
    // Stamped with the time of day, as a capture of the packet would be.
    softib::capture::ErfClock clock;
    const std::vector<softib::capture::CapturedPacket> packets = {
        {clock.Next(), softib::capture::kErfTypeInfiniband, packet}};
    if (std::string e = softib::capture::WriteErfFile(*args.erf, packets); !e.empty())
      return Fail(e);
  }
  if (args.out) {
    std::ofstream f(*args.out, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(bytes->data()),
            static_cast<std::streamsize>(bytes->size()));
    if (!f) return Fail("cannot write " + *args.out);
  }
  if (!args.out && !args.erf) std::cout << softib::hex::Format(*bytes) << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"softib: an InfiniBand software stack generated from one IDL"};
  app.require_subcommand(1);
  CLI::App* mad = app.add_subcommand("mad", "decode, encode and list MADs and wire headers");
  mad->require_subcommand(1);

  DecodeArgs decode;
  CLI::App* dec = mad->add_subcommand("decode", "decode a MAD, a layout or a whole packet");
  dec->add_option("--hex", decode.hex, "bytes as hex ('-' reads stdin)");
  dec->add_option("--file", decode.file, "raw bytes from a file");
  dec->add_option("--erf", decode.erf, "packets from an ERF capture (record type 21)");
  dec->add_option("--pcap", decode.pcap, "packets from a pcap capture (link type 247 or 197)");
  dec->add_option("--layout", decode.layout, "decode as this layout instead of as a MAD");
  dec->add_flag("--packet", decode.packet, "the bytes are a whole packet, LRH through VCRC");

  EncodeArgs encode;
  CLI::App* enc = mad->add_subcommand("encode", "build a MAD or a header from Field=value");
  enc->add_option("--layout", encode.request.layout, "attribute, format or header name")
      ->required();
  enc->add_option("assignments", encode.request.assignments,
                  "Field=value (mad.Field=value sets a field of the MAD header)");
  enc->add_option("--class", encode.request.mgmt_class, "management class (name or number)");
  enc->add_option("--method", encode.request.method, "method (name or number)");
  enc->add_option("--attr-mod", encode.request.attribute_modifier, "attribute modifier");
  enc->add_option("--tid", encode.request.transaction_id, "transaction ID");
  enc->add_option("--out", encode.out, "write the raw bytes to this file");
  enc->add_option("--erf", encode.erf, "write the MAD as a UD packet into this ERF file");
  enc->add_option("--dlid", encode.packet.dlid, "--erf: destination LID");
  enc->add_option("--slid", encode.packet.slid, "--erf: source LID");

  CLI::App* list = mad->add_subcommand("list", "list every management class and layout");

  softib::topotool::TopologyCli topology;
  softib::topotool::AddTopologyCommands(app, topology);
  softib::fabrictool::FabricCli fabric;
  softib::fabrictool::AddFabricCommand(app, fabric);
  softib::ipoibtool::IpoibCli ipoib;
  softib::ipoibtool::AddIpoibCommand(app, ipoib);
  softib::ibattool::IbatCli ibat;
  softib::ibattool::AddIbatCommand(app, ibat);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "softib: error: " << e.what() << "\n";
    return kBadInput;
  }
  if (topology.topology->parsed()) return softib::topotool::RunTopologyCommand(topology);
  if (fabric.fabric->parsed()) return softib::fabrictool::RunFabricCommand(fabric);
  if (ipoib.ipoib->parsed()) return softib::ipoibtool::RunIpoibCommand(ipoib);
  if (ibat.ibat->parsed()) return softib::ibattool::RunIbatCommand(ibat);
  if (dec->parsed()) return RunDecode(decode);
  if (enc->parsed()) return RunEncode(encode);
  if (list->parsed()) {
    softib::madtool::ListLayouts(std::cout);
    return 0;
  }
  return kBadInput;
}
