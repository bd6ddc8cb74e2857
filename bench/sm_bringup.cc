// Subnet bring-up time: softib-sm --once against `opensm --once` (OpenSM 3.3, the floor),
// each against a freshly started ibsim on the same topology file, in the same run. Wall
// time of each program from fork to exit (both pay the same umad2sim start-up), best of
// --rounds. Rows: preset, nodes, softib-sm s, OpenSM s, ratio softib/OpenSM (goal <= 0.5),
// SMPs softib-sm sent.
//   softib_bench_sm_bringup [--rounds N] [--presets default,ft36,ft92]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "fabric/topology/generators.h"
#include "fabric/topology/ibnetdiscover_writer.h"
#include "ibsim_harness.h"

namespace {

namespace fs = std::filesystem;
using softib::sm::testing::Ibsim;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

struct Result {
  double seconds = -1;
  std::string smps;
  std::string failure;
};

Result TimeOne(const std::string& dir, const std::string& file, const std::string& name,
               bool opensm, int round) {
  const std::string sock = "softib-bench-sm-" + std::to_string(::getpid()) + "-" + name + "-" +
                           (opensm ? "osm" : "sm") + std::to_string(round);
  Ibsim sim(file, dir, sock, {"-N", "4096"});
  Result r;
  if (!sim.ready()) {
    r.failure = "ibsim did not start:\n" + sim.log();
    return r;
  }
  Ibsim::Run run;
  const auto start = std::chrono::steady_clock::now();
  if (opensm) {
    // A cache directory of its own per run, so no guid2lid carries over.
    const std::string cache = dir + "/osm-" + std::to_string(round);
    fs::create_directories(cache);
    run = sim.Tool({"opensm", "--once", "-s", "0", "-F", "/dev/null", "-f", cache + "/osm.log"},
                   {{"OSM_TMP_DIR", cache}, {"OSM_CACHE_DIR", cache}});
    r.seconds = Seconds(start);
    std::ifstream log(cache + "/osm.log");
    std::stringstream text;
    text << log.rdbuf();
    if (text.str().find("SUBNET UP") == std::string::npos)
      r.failure = "OpenSM did not bring the subnet up:\n" + text.str().substr(0, 2000);
  } else {
    run = sim.Tool({SOFTIB_SM_BINARY, "--once", "--quiet"});
    r.seconds = Seconds(start);
    std::smatch m;
    if (std::regex_search(run.out, m, std::regex("([0-9]+) SMPs"))) r.smps = m[1];
    if (run.status != 0 || run.out.find("subnet up") == std::string::npos)
      r.failure = "softib-sm failed:\n" + run.out + run.err;
  }
  sim.Stop();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  std::string presets = "default,ft36";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--presets") && i + 1 < argc) {
      presets = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--presets default,ft36,ft92]\n", argv[0]);
      return 2;
    }
  }
  char tmpl[] = "/tmp/softib-bench-sm-XXXXXX";
  if (!::mkdtemp(tmpl)) return 1;
  const std::string dir = tmpl;
  int status = 0;
  std::printf("%-8s %6s %12s %12s %8s %8s\n", "preset", "nodes", "softib-sm_s", "opensm_s", "ratio",
              "smps");
  std::stringstream list(presets);
  for (std::string name; std::getline(list, name, ',');) {
    auto topology = softib::fabric::MakePreset(name);
    if (!topology) {
      std::fprintf(stderr, "unknown preset %s\n", name.c_str());
      status = 2;
      continue;
    }
    const std::string file = dir + "/" + name + ".net";
    if (softib::fabric::WriteIbnetdiscoverFile(*topology, file) != "") return 1;
    double best_sm = 1e9, best_osm = 1e9;
    std::string smps;
    bool failed = false;
    for (int round = 0; round < rounds && !failed; ++round) {
      for (bool opensm : {false, true}) {
        const Result r = TimeOne(dir, file, name, opensm, round);
        if (!r.failure.empty()) {
          std::fprintf(stderr, "%s: %s\n", name.c_str(), r.failure.c_str());
          failed = true;
          break;
        }
        (opensm ? best_osm : best_sm) = std::min(opensm ? best_osm : best_sm, r.seconds);
        if (!opensm) smps = r.smps;
      }
    }
    if (failed) {
      status = 1;
      continue;
    }
    std::printf("%-8s %6zu %12.3f %12.3f %8.2f %8s\n", name.c_str(), topology->nodes().size(),
                best_sm, best_osm, best_sm / best_osm, smps.c_str());
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return status;
}
