// Subnet bring-up time: softib-sm --once against `opensm --once` (OpenSM 3.3, the floor),
// each against a freshly started ibsim on the same topology file, in the same run. Wall
// time of each program from fork to exit (both pay the same umad2sim start-up), best of
// --rounds. Rows: preset, nodes, softib-sm s, OpenSM s, ratio softib/OpenSM (goal <= 0.5),
// SMPs softib-sm sent. Then softib-sm on softib's own fabric (softibd --fabric <preset>
// --sm external --ibsim, light hosts except on the default fabric): wall time, SMPs, SMPs/s,
// the ratio to OpenSM on ibsim where both ran, softibd's resident memory. Then the same SM
// inside softibd (--sm internal, same hosts): from softibd's fork to the first sweep's
// summary in <run-dir>/sm.summary, the sweep time itself, SMPs, SMPs/s of the sweep, the
// sweep's ratio to OpenSM on ibsim.
//   softib_bench_sm_bringup [--rounds N] [--presets default,ft36,ft92]
//                           [--softib-presets default,ft36,ft92,ft-k36]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
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

// softib-sm --once against `softibd --fabric <preset> --sm external --ibsim NAME` (hosts
// light, or full nodes), from fork to exit; also the daemon's resident memory once ready.
Result TimeOnSoftib(const std::string& dir, const std::string& preset, bool light, int round,
                    long* rss_kib) {
  const std::string sock =
      "softib-bench-smfab-" + std::to_string(::getpid()) + "-" + preset + std::to_string(round);
  std::vector<std::string> argv = {SOFTIBD_BINARY, "--run-dir", dir + "/run-" + sock,
                                   "--fabric",     preset,      "--sm",
                                   "external",     "--ibsim",   sock};
  if (light) argv.push_back("--light-hosts");
  Result r;
  softib::sm::testing::Child daemon(argv, dir, {}, dir + "/softibd.err");
  if (!daemon.WaitFor("softibd: ready", 300000)) {
    r.failure = "softibd did not start";
    return r;
  }
  std::ifstream status("/proc/" + std::to_string(daemon.pid()) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) *rss_kib = std::atol(line.c_str() + 6);
  const auto start = std::chrono::steady_clock::now();
  softib::sm::testing::Child sm({"ibsim-run", SOFTIB_SM_BINARY, "--once", "--quiet"}, dir,
                                {{"IBSIM_SOCKNAME", sock}}, dir + "/sm.err");
  const int exit_code = sm.Wait();
  r.seconds = Seconds(start);
  std::smatch m;
  const std::string out = sm.output();
  if (std::regex_search(out, m, std::regex("([0-9]+) SMPs"))) r.smps = m[1];
  if (exit_code != 0 || out.find("subnet up") == std::string::npos)
    r.failure = "softib-sm failed on softibd --fabric " + preset + ":\n" + out;
  daemon.Stop();
  return r;
}

struct InternalResult {
  Result sweep;             // seconds: the sweep time the summary reports
  double start_to_up = -1;  // fork of softibd to the summary file
  long rss_kib = 0;
};

// `softibd --fabric <preset> --sm internal`: waits for <run-dir>/sm.summary (written whole,
// newline last) and reads the first sweep's summary line from it.
InternalResult TimeInternal(const std::string& dir, const std::string& preset, bool light,
                            int round) {
  const std::string run =
      dir + "/run-int-" + std::to_string(::getpid()) + "-" + preset + std::to_string(round);
  std::vector<std::string> argv = {SOFTIBD_BINARY, "--run-dir", run,       "--fabric",
                                   preset,         "--sm",      "internal"};
  if (light) argv.push_back("--light-hosts");
  InternalResult r;
  const auto start = std::chrono::steady_clock::now();
  softib::sm::testing::Child daemon(argv, dir, {}, dir + "/softibd-int.err");
  std::string summary;
  // Reads (and so drains) the printed fabric; the SM may well be done by then.
  if (!daemon.WaitFor("softibd: ready", 300000)) {
    r.sweep.failure = "softibd --sm internal --fabric " + preset + " did not start";
    return r;
  }
  while (Seconds(start) < 300) {
    std::ifstream file(run + "/sm.summary");
    if (std::getline(file, summary) && !file.eof()) break;  // a whole line (newline read)
    summary.clear();
    ::usleep(20000);
  }
  r.start_to_up = Seconds(start);
  std::ifstream status("/proc/" + std::to_string(daemon.pid()) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) r.rss_kib = std::atol(line.c_str() + 6);
  daemon.Stop();
  std::smatch m;
  if (std::regex_search(summary, m, std::regex("([0-9]+) SMPs"))) r.sweep.smps = m[1];
  if (std::regex_search(summary, m, std::regex("([0-9.]+) s$"))) r.sweep.seconds = std::stod(m[1]);
  if (summary.find("subnet up") == std::string::npos || r.sweep.seconds < 0)
    r.sweep.failure = "softibd --sm internal --fabric " + preset + ": no summary: " + summary;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  std::string presets = "default,ft36";
  std::string own = "default,ft36";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--presets") && i + 1 < argc) {
      presets = argv[++i];
    } else if (!std::strcmp(argv[i], "--softib-presets") && i + 1 < argc) {
      own = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--rounds N] [--presets default,ft36,ft92] "
                   "[--softib-presets default,ft36,ft92,ft-k36]\n",
                   argv[0]);
      return 2;
    }
  }
  std::map<std::string, double> opensm_seconds;  // for the ratio of the own-fabric rows
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
    opensm_seconds[name] = best_osm;
  }

  // softib-sm on softib's own fabric: light hosts, except the default fabric's full nodes
  // (the main job's). vs_opensm: this wall time / OpenSM's on ibsim above.
  std::printf("\non softib's fabric (softibd --sm external --ibsim)\n");
  std::printf("%-8s %6s %6s %8s %9s %9s %9s %8s\n", "preset", "nodes", "light", "wall_s", "smps",
              "smps_s", "vs_opensm", "rss_mib");
  std::stringstream own_list(own);
  for (std::string name; std::getline(own_list, name, ',');) {
    auto topology = softib::fabric::MakePreset(name);
    if (!topology) {
      std::fprintf(stderr, "unknown preset %s\n", name.c_str());
      status = 2;
      continue;
    }
    const bool light = name != "default";
    Result best;
    long rss_kib = 0;
    for (int round = 0; round < rounds; ++round) {
      const Result r = TimeOnSoftib(dir, name, light, round, &rss_kib);
      if (!r.failure.empty()) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), r.failure.c_str());
        best = r;
        break;
      }
      if (best.seconds < 0 || r.seconds < best.seconds) best = r;
    }
    if (!best.failure.empty()) {
      status = 1;
      continue;
    }
    const auto osm = opensm_seconds.find(name);
    char ratio[16] = "-";
    if (osm != opensm_seconds.end())
      std::snprintf(ratio, sizeof ratio, "%.2f", best.seconds / osm->second);
    std::printf("%-8s %6zu %6s %8.3f %9s %9.0f %9s %8.1f\n", name.c_str(), topology->nodes().size(),
                light ? "yes" : "no", best.seconds, best.smps.c_str(),
                std::atof(best.smps.c_str()) / best.seconds, ratio, rss_kib / 1024.0);
    std::fflush(stdout);
  }

  // The same SM inside softibd: no ibsim sockets, umad2sim or separate process.
  std::printf("\ninside softibd (softibd --sm internal)\n");
  std::printf("%-8s %6s %6s %10s %8s %9s %9s %9s %8s\n", "preset", "nodes", "light", "start_up_s",
              "sweep_s", "smps", "smps_s", "vs_opensm", "rss_mib");
  std::stringstream internal_list(own);
  for (std::string name; std::getline(internal_list, name, ',');) {
    auto topology = softib::fabric::MakePreset(name);
    if (!topology) continue;  // said above
    const bool light = name != "default";
    InternalResult best;
    for (int round = 0; round < rounds; ++round) {
      const InternalResult r = TimeInternal(dir, name, light, round);
      if (!r.sweep.failure.empty()) {
        std::fprintf(stderr, "%s: %s\n", name.c_str(), r.sweep.failure.c_str());
        best = r;
        break;
      }
      if (best.sweep.seconds < 0 || r.sweep.seconds < best.sweep.seconds) best = r;
    }
    if (!best.sweep.failure.empty()) {
      status = 1;
      continue;
    }
    const auto osm = opensm_seconds.find(name);
    char ratio[16] = "-";
    if (osm != opensm_seconds.end())
      std::snprintf(ratio, sizeof ratio, "%.3f", best.sweep.seconds / osm->second);
    std::printf(
        "%-8s %6zu %6s %10.3f %8.3f %9s %9.0f %9s %8.1f\n", name.c_str(), topology->nodes().size(),
        light ? "yes" : "no", best.start_to_up, best.sweep.seconds, best.sweep.smps.c_str(),
        std::atof(best.sweep.smps.c_str()) / best.sweep.seconds, ratio, best.rss_kib / 1024.0);
    std::fflush(stdout);
  }
  fs::remove_all(dir);
  return status;
}
