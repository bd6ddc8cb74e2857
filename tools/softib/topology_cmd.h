// `softib topology`: generate, print and check topology files (ibnetdiscover format).
//   softib topology gen fat-tree --leaves N --hosts-per-leaf N --spines N [--uplinks N]
//                                [--levels 3 --pods N --aggs-per-pod N] [hardware] [-o FILE]
//   softib topology gen torus --x N --y N --hosts N [hardware] [-o FILE]
//     hardware: [--radix N] [--hca-ports N] [--width 4x] [--speed QDR]
//   softib topology default [-o FILE]
//   softib topology preset NAME [-o FILE]     (default, ft36, ft92, ft-k36)
//   softib topology check FILE                (prints the counts; exit 1 if invalid)
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "fabric/topology/generators.h"

namespace softib::topotool {

struct TopologyCli {
  fabric::FatTreeShape fat_tree;
  fabric::TorusShape torus;
  std::string fat_tree_width = "4x", fat_tree_speed = "QDR";
  std::string torus_width = "4x", torus_speed = "QDR";
  std::string preset_name, check_path;
  std::optional<std::string> output;
  CLI::App* topology = nullptr;
  CLI::App* gen_fat_tree = nullptr;
  CLI::App* gen_torus = nullptr;
  CLI::App* default_cmd = nullptr;
  CLI::App* preset = nullptr;
  CLI::App* check = nullptr;
};

void AddTopologyCommands(CLI::App& app, TopologyCli& cli);

// The exit code of the parsed `topology` subcommand: 0, 1 (check found the file invalid)
// or 2 (bad command line or unwritable output, one "softib: error:" line).
int RunTopologyCommand(const TopologyCli& cli);

}  // namespace softib::topotool
