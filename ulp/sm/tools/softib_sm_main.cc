// softib-sm: softib's subnet manager as a program. Over libibumad it drives a real umad
// device or, under `ibsim-run`, ibsim's simulated fabric:
//   ibsim-run softib-sm --once [--lmc N] [--guid2lid FILE] [--window N] ...
// and with --run-dir it is a user process of a softibd node, over the AL's MAD services:
//   softib-sm --run-dir RUN/host-0001 --once --verify
// and, as MASTER, its SA answers SubnAdm queries. `--query` turns it into a requester:
//   ibsim-run softib-sm --query PathRecord SLID=1 DLID=3
#include <signal.h>
#include <atomic>

#include <iostream>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fabric/topology/ibnetdiscover_writer.h"
#include "softib/sm/al_mad_port.h"
#include "softib/sm/sa_client.h"
#include "softib/sm/subnet_manager.h"
#include "softib/sm/subnet_topology.h"
#include "softib/sm/umad_port.h"

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

void Usage(std::FILE* out) {
  std::fputs(
      "usage: softib-sm [options]\n"
      "  -o, --once            sweep once, then exit (0: subnet up)\n"
      "      --run-dir DIR     a softibd node's directory: use its AL's MAD services\n"
      "                        (RMPP for SA tables) instead of libibumad\n"
      "  -C, --ca NAME         CA to bind to (default: the first; with --run-dir a GUID)\n"
      "  -P, --port N          port to bind to (default: the first)\n"
      "  -l, --lmc N           LMC 0..7 for CA ports (default 0)\n"
      "  -g, --guid2lid FILE   keep LIDs stable across restarts in FILE (OpenSM's format)\n"
      "  -w, --window N        SMPs in flight (default 64)\n"
      "  -t, --timeout MS      per-SMP timeout (default 200)\n"
      "  -r, --retries N       retries per SMP (default 3)\n"
      "  -p, --priority N      SMInfo priority 0..15 (default 0)\n"
      "      --sm-key KEY      SMInfo SM_Key (default 0)\n"
      "      --subnet-prefix 0xHEX  GID prefix written to every end port's PortInfo\n"
      "                        (default 0xfe80000000000000)\n"
      "  -R, --routing ENGINE  minhop (default), updn or ftree\n"
      "  -a, --root-guid-file FILE  up/down roots, one switch GUID a line\n"
      "      --sweep-interval S  light sweep period as MASTER, seconds (10; 0 = off)\n"
      "      --poll-interval S   STANDBY's poll of the master, seconds (1)\n"
      "      --verify          read the LFTs back from the switches and check those\n"
      "      --dump-topology FILE  after the first sweep, write the subnet as ibnetdiscover\n"
      "                        prints it (GUIDs, descriptions, LIDs, link rates); - = stdout\n"
      "  -q, --quiet           no progress lines (the summary line still prints)\n"
      "      --no-sa           do not answer SubnAdm (class 0x03) requests\n"
      "      --resweep S       sweep again every S seconds while MASTER (traps 64/65)\n"
      "      --Pconfig FILE, --partitions FILE\n"
      "                        partitions (OpenSM's partitions.conf subset); -P is --port\n"
      "  -Q, --query ATTR [Field=value ...] [--get|--set|--delete]\n"
      "                        ask the SM's SA (GetTable, or Get/Set/Delete) for ATTR\n"
      "                        (NodeRecord, NR, PIR, PR, SWIR, LFTR, LR, GIR, PKTR, SR,\n"
      "                        MCMR, IIR, CPI); each Field=value sets a ComponentMask bit\n"
      "  -h, --help\n",
      out);
}

bool Number(const char* text, long min, long max, long* out) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 0);
  if (!text[0] || *end || v < min || v > max) return false;
  *out = v;
  return true;
}

// A subnet prefix: 1 to 16 hex digits after an optional 0x, in a legal GID form.
bool SubnetPrefix(const char* text, uint64_t* out, std::string* error) {
  std::string digits = text;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
    digits.erase(0, 2);
  if (digits.empty() || digits.size() > 16 ||
      digits.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    *error = std::string("'") + text + "' is not a 64-bit hex number";
    return false;
  }
  *out = std::strtoull(digits.c_str(), nullptr, 16);
  *error = softib::sm::SubnetPrefixError(*out);
  return error->empty();
}

// Writes what the sweep found in ibnetdiscover's format, to a file or stdout.
bool DumpTopology(const softib::sm::Subnet& subnet, const std::string& path) {
  const softib::fabric::Topology topology = softib::sm::TopologyFromSubnet(subnet);
  if (path == "-") {
    const softib::fabric::WriteResult written = softib::fabric::WriteIbnetdiscover(topology);
    if (!written.ok()) {
      std::fprintf(stderr, "softib-sm: --dump-topology: %s\n", written.error.c_str());
      return false;
    }
    std::fputs(written.text.c_str(), stdout);
    return true;
  }
  const std::string error = softib::fabric::WriteIbnetdiscoverFile(topology, path);
  if (!error.empty()) std::fprintf(stderr, "softib-sm: --dump-topology: %s\n", error.c_str());
  return error.empty();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace softib::sm;
  SmOptions options;
  UmadPortOptions port_options;
  AlMadPortOptions al_options;
  bool al = false;
  bool once = false;
  bool quiet = false;
  bool query = false;
  std::string dump_topology;
  SaClientRequest sa_request;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](long min, long max, long* out) {
      if (i + 1 >= argc || !Number(argv[i + 1], min, max, out)) {
        std::fprintf(stderr, "softib-sm: %s needs a number in %ld..%ld\n", a.c_str(), min, max);
        std::exit(2);
      }
      ++i;
    };
    long v = 0;
    if (a == "-o" || a == "--once") {
      once = true;
    } else if (a == "-C" || a == "--ca") {
      if (++i >= argc) return Usage(stderr), 2;
      port_options.ca = argv[i];
    } else if (a == "--run-dir") {
      if (++i >= argc) return Usage(stderr), 2;
      al = true;
      al_options.run_dir = argv[i];
    } else if (a == "-P" || a == "--port") {
      value(0, 254, &v);
      port_options.port = static_cast<int>(v);
    } else if (a == "-l" || a == "--lmc") {
      value(0, 7, &v);
      options.lmc = static_cast<uint8_t>(v);
    } else if (a == "-g" || a == "--guid2lid") {
      if (++i >= argc) return Usage(stderr), 2;
      options.guid2lid_path = argv[i];
    } else if (a == "-w" || a == "--window") {
      value(1, 4096, &v);
      options.tx.window = static_cast<unsigned>(v);
    } else if (a == "-t" || a == "--timeout") {
      value(1, 60000, &v);
      options.tx.timeout_ms = static_cast<int>(v);
    } else if (a == "-r" || a == "--retries") {
      value(0, 100, &v);
      options.tx.retries = static_cast<unsigned>(v);
    } else if (a == "-p" || a == "--priority") {
      value(0, 15, &v);
      options.priority = static_cast<uint8_t>(v);
    } else if (a == "--sm-key") {
      if (++i >= argc) return Usage(stderr), 2;
      options.sm_key = std::strtoull(argv[i], nullptr, 0);
    } else if (a == "--subnet-prefix") {
      std::string error = "needs a value";
      if (++i >= argc || !SubnetPrefix(argv[i], &options.subnet_prefix, &error)) {
        std::fprintf(stderr, "softib-sm: --subnet-prefix: %s\n", error.c_str());
        return 2;
      }
    } else if (a == "-R" || a == "--routing") {
      if (++i >= argc || !ParseRoutingEngine(argv[i], &options.routing.engine)) {
        std::fprintf(stderr, "softib-sm: --routing needs minhop, updn or ftree\n");
        return 2;
      }
    } else if (a == "-a" || a == "--root-guid-file") {
      std::string error;
      if (++i >= argc || !LoadRootGuids(argv[i], &options.routing.root_guids, &error)) {
        std::fprintf(stderr, "softib-sm: --root-guid-file: %s\n", error.c_str());
        return 2;
      }
    } else if (a == "--sweep-interval" || a == "--poll-interval") {
      if (++i >= argc) return Usage(stderr), 2;
      char* end = nullptr;
      const double seconds = std::strtod(argv[i], &end);
      if (*end || seconds < 0 || seconds > 3600 || (a == "--poll-interval" && seconds <= 0)) {
        std::fprintf(stderr, "softib-sm: %s needs seconds in 0..3600\n", a.c_str());
        return 2;
      }
      (a == "--sweep-interval" ? options.sweep_interval_s : options.poll_interval_s) = seconds;
    } else if (a == "-Q" || a == "--query") {
      if (++i >= argc) return Usage(stderr), 2;
      query = true;
      sa_request.attribute = argv[i];
      while (i + 1 < argc && std::strchr(argv[i + 1], '=') && argv[i + 1][0] != '-') {
        const std::string kv = argv[++i];
        sa_request.fields.emplace_back(kv.substr(0, kv.find('=')), kv.substr(kv.find('=') + 1));
      }
    } else if (a == "--get") {
      sa_request.method = 0x01;
    } else if (a == "--set") {
      sa_request.method = 0x02;
    } else if (a == "--delete") {
      sa_request.method = 0x15;
    } else if (a == "--no-sa") {
      options.sa = false;
    } else if (a == "--resweep") {
      value(1, 86400, &v);
      options.resweep_s = static_cast<double>(v);
    } else if (a == "--Pconfig" || a == "--partitions") {
      std::string error;
      if (++i >= argc || !LoadPartitions(argv[i], &options.partitions, &error)) {
        std::fprintf(stderr, "softib-sm: %s: %s\n", a.c_str(),
                     i < argc ? error.c_str() : "needs a file");
        return 2;
      }
    } else if (a == "--verify") {
      options.verify_lfts = true;
    } else if (a == "--dump-topology") {
      if (++i >= argc) return Usage(stderr), 2;
      dump_topology = argv[i];
    } else if (a == "-q" || a == "--quiet") {
      quiet = true;
    } else if (a == "-h" || a == "--help") {
      Usage(stdout);
      return 0;
    } else {
      std::fprintf(stderr, "softib-sm: unknown option %s\n", a.c_str());
      Usage(stderr);
      return 2;
    }
  }
  if (quiet) options.progress_interval_s = 1e9;

  if (al) {
    al_options.port = port_options.port;
    if (!port_options.ca.empty()) {
      char* end = nullptr;
      al_options.ca_guid = std::strtoull(port_options.ca.c_str(), &end, 16);
      if (*end || al_options.ca_guid == 0) {
        std::fprintf(stderr, "softib-sm: with --run-dir, --ca takes a CA GUID (hex)\n");
        return 2;
      }
    }
  }
  std::string error;
  // The transport: the AL's MAD services of a softibd node, or libibumad.
  auto open_port = [&](uint16_t* sm_lid) -> std::unique_ptr<MadPort> {
    if (al) {
      AlPortInfo info;
      auto port = OpenAlMadPort(al_options, &error, &info);
      if (sm_lid) *sm_lid = info.sm_lid;
      return port;
    }
    if (sm_lid) *sm_lid = UmadSmLid(port_options);
    return OpenUmadPort(port_options, &error);
  };
  if (query) {
    port_options.issm = al_options.issm = false;
    port_options.sm_agents = al_options.sm_agents = false;
    port_options.sa_server = al_options.sa_server = false;
    uint16_t sm_lid = 0;
    auto port = open_port(&sm_lid);
    if (!port) {
      std::fprintf(stderr, "softib-sm: %s\n", error.c_str());
      return 1;
    }
    const SaClientAnswer answer = RunSaQuery(*port, sm_lid, sa_request);
    PrintSaAnswer(std::cout, answer);
    return answer.error.empty() && answer.status == 0 ? 0 : 1;
  }
  auto port = open_port(nullptr);
  if (!port) {
    std::fprintf(stderr, "softib-sm: %s\n", error.c_str());
    return 1;
  }
  SubnetManager sm(*port, options);
  const SweepReport report = sm.Sweep();
  sm.Announce(stdout, report, "first sweep");
  // A sweep that failed on a working port (Sets refused or lost on a loaded fabric) is swept
  // again by Run(); --once, and a port that fails, end here.
  if (!report.ok() && (once || !report.discovery.ok())) return 1;
  if (!dump_topology.empty() && !DumpTopology(sm.subnet(), dump_topology)) return 1;
  if (once) return 0;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return sm.Run(&g_stop, stdout) ? 0 : 1;
}
