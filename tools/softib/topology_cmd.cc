#include "topology_cmd.h"

#include <iostream>

#include "fabric/topology/ibnetdiscover_reader.h"
#include "fabric/topology/ibnetdiscover_writer.h"

namespace softib::topotool {
namespace {

using fabric::Hardware;
using fabric::Topology;

constexpr int kInvalidFile = 1;
constexpr int kBadInput = 2;

int Fail(const std::string& error) {
  std::cerr << "softib: error: " << error << "\n";
  return kBadInput;
}

void AddHardware(CLI::App* cmd, Hardware& hw, std::string& width, std::string& speed) {
  cmd->add_option("--radix", hw.radix, "ports per switch (default 36)")->check(CLI::Range(1, 254));
  cmd->add_option("--hca-ports", hw.hca_ports, "ports per HCA, port 1 cabled (default 1)")
      ->check(CLI::Range(1, 15));
  cmd->add_option("--width", width, "link width: 1x, 2x, 4x, 8x, 12x (default 4x)");
  cmd->add_option("--speed", speed,
                  "link speed: SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR (default QDR)");
}

// Fills in width and speed; "" or the reason they are not valid.
std::string ParseRate(const std::string& width, const std::string& speed, Hardware& hw) {
  const auto w = fabric::ParseLinkWidth(width);
  if (!w) return "--width " + width + ": expected 1x, 2x, 4x, 8x or 12x";
  const auto s = fabric::ParseLinkSpeed(speed);
  if (!s) return "--speed " + speed + ": expected SDR, DDR, QDR, FDR10, FDR, EDR, HDR or NDR";
  hw.width = *w;
  hw.speed = *s;
  return "";
}

int Emit(const Topology& t, const std::optional<std::string>& output) {
  if (output) {
    if (std::string e = fabric::WriteIbnetdiscoverFile(t, *output); !e.empty()) return Fail(e);
    return 0;
  }
  const fabric::WriteResult w = fabric::WriteIbnetdiscover(t);
  if (!w.ok()) return Fail(w.error);
  std::cout << w.text;
  return std::cout.flush() ? 0 : kBadInput;
}

int RunFatTree(const TopologyCli& cli) {
  fabric::FatTreeShape shape = cli.fat_tree;
  const bool three = shape.levels == 3;
  if (!three && (cli.gen_fat_tree->count("--pods") || cli.gen_fat_tree->count("--aggs-per-pod")))
    return Fail("--pods and --aggs-per-pod need --levels 3");
  if (three && cli.gen_fat_tree->count("--uplinks"))
    return Fail("--uplinks applies to --levels 2 (a 3-level tree links every pair once)");
  if (std::string e = ParseRate(cli.fat_tree_width, cli.fat_tree_speed, shape.hardware); !e.empty())
    return Fail(e);
  fabric::GenerateResult g = fabric::GenerateFatTree(shape);
  if (!g.ok()) return Fail("fat tree: " + g.error);
  return Emit(*g.topology, cli.output);
}

int RunTorus(const TopologyCli& cli) {
  fabric::TorusShape shape = cli.torus;
  if (std::string e = ParseRate(cli.torus_width, cli.torus_speed, shape.hardware); !e.empty())
    return Fail(e);
  fabric::GenerateResult g = fabric::GenerateTorus(shape);
  if (!g.ok()) return Fail("torus: " + g.error);
  return Emit(*g.topology, cli.output);
}

int RunPreset(const std::string& name, const std::optional<std::string>& output) {
  std::optional<Topology> t = fabric::MakePreset(name);
  if (!t) {
    std::string names;
    for (const auto& p : fabric::Presets())
      names += (names.empty() ? "" : ", ") + std::string(p.name);
    return Fail("unknown preset '" + name + "' (known: " + names + ")");
  }
  return Emit(*t, output);
}

int RunCheck(const std::string& path) {
  fabric::ReadResult r = fabric::ReadIbnetdiscoverFile(path);
  if (!r.ok()) {
    std::cerr << "softib: error: " << r.error << "\n";
    return kInvalidFile;
  }
  const Topology& t = *r.topology;
  std::cout << path << ": " << t.Count(fabric::NodeType::kSwitch) << " switches, "
            << t.Count(fabric::NodeType::kCa) << " CAs, " << t.Count(fabric::NodeType::kRouter)
            << " routers, " << t.links().size() << " links\n";
  return 0;
}

}  // namespace

void AddTopologyCommands(CLI::App& app, TopologyCli& cli) {
  cli.topology = app.add_subcommand("topology", "generate, print and check topology files");
  cli.topology->require_subcommand(1);

  CLI::App* gen = cli.topology->add_subcommand("gen", "generate a fabric in ibnetdiscover format");
  gen->require_subcommand(1);

  auto& ft = cli.fat_tree;
  cli.gen_fat_tree = gen->add_subcommand("fat-tree", "2- or 3-level fat tree");
  CLI::App* f = cli.gen_fat_tree;
  f->add_option("--leaves", ft.leaves, "leaf switches (all pods together)")->required();
  f->add_option("--hosts-per-leaf", ft.hosts_per_leaf, "HCAs on each leaf")->required();
  f->add_option("--spines", ft.spines, "top-level switches (cores when --levels 3)")->required();
  f->add_option("--uplinks", ft.uplinks,
                "links from each leaf to each spine (levels 2; default 1)");
  f->add_option("--levels", ft.levels, "2 (default) or 3")->check(CLI::IsMember({2u, 3u}));
  f->add_option("--pods", ft.pods, "pods (levels 3)");
  f->add_option("--aggs-per-pod", ft.aggs_per_pod, "aggregation switches per pod (levels 3)");
  AddHardware(f, ft.hardware, cli.fat_tree_width, cli.fat_tree_speed);
  f->add_option("-o,--output", cli.output, "write to FILE instead of stdout");

  auto& tr = cli.torus;
  cli.gen_torus = gen->add_subcommand("torus", "2-D torus of switches with wraparound");
  CLI::App* t = cli.gen_torus;
  t->add_option("--x", tr.x, "switches along x")->required();
  t->add_option("--y", tr.y, "switches along y")->required();
  t->add_option("--hosts", tr.hosts_per_switch, "HCAs on each switch")->required();
  AddHardware(t, tr.hardware, cli.torus_width, cli.torus_speed);
  t->add_option("-o,--output", cli.output, "write to FILE instead of stdout");

  cli.default_cmd = cli.topology->add_subcommand("default", "print the embedded default fabric");
  cli.default_cmd->add_option("-o,--output", cli.output, "write to FILE instead of stdout");

  std::string preset_help = "print a named fabric:";
  for (const auto& p : fabric::Presets())
    preset_help += "\n  " + std::string(p.name) + ": " + std::string(p.shape);
  cli.preset = cli.topology->add_subcommand("preset", preset_help);
  cli.preset->add_option("name", cli.preset_name, "preset name")->required();
  cli.preset->add_option("-o,--output", cli.output, "write to FILE instead of stdout");

  cli.check = cli.topology->add_subcommand("check", "validate a file and print its counts");
  cli.check->add_option("file", cli.check_path, "topology file")->required();
}

int RunTopologyCommand(const TopologyCli& cli) {
  if (cli.gen_fat_tree->parsed()) return RunFatTree(cli);
  if (cli.gen_torus->parsed()) return RunTorus(cli);
  if (cli.default_cmd->parsed()) return RunPreset("default", cli.output);
  if (cli.preset->parsed()) return RunPreset(cli.preset_name, cli.output);
  if (cli.check->parsed()) return RunCheck(cli.check_path);
  return Fail("topology: give a subcommand");
}

}  // namespace softib::topotool
