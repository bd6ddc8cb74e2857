// softib_bench_fabric_soak: RC SENDs across two switches (three cables) with every cable
// losing, duplicating and reordering packets, checked for exactly-once in-order delivery of
// every byte — against the same run on a clean fabric (the floor) in the same process.
//
//   softib_bench_fabric_soak [--messages N]   (default 1,000,000)
//
// The clock is the fabric's fake one (1 ms per idle step), so the rate measures the
// work of recovery (retransmissions, duplicate detection, NAKs), not waiting out timers.
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_util.h"
#include "rc_scenario.h"

namespace {

using softib::fabric::LinkFaults;
using softib::fabric::testing::RcOverSwitches;
using softib::fabric::testing::RcRunResult;

struct Row {
  RcRunResult result;
  double seconds = 0;
};

Row Run(uint32_t messages, const LinkFaults* faults) {
  RcOverSwitches scenario(20261123);
  if (faults != nullptr) scenario.SetFaultsEverywhere(*faults);
  const uint64_t start = softib::bench::NowNs();
  Row row;
  row.result = scenario.RunSends(messages);
  row.seconds = static_cast<double>(softib::bench::NowNs() - start) / 1e9;
  if (!row.result.error.empty())
    softib::bench::Die("softib_bench_fabric_soak", "RC run failed: " + row.result.error);
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t messages = 1'000'000;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--messages") == 0 && i + 1 < argc) {
      messages = static_cast<uint32_t>(std::stoul(argv[++i]));
    } else {
      std::fprintf(stderr, "usage: softib_bench_fabric_soak [--messages N]\n");
      return 2;
    }
  }
  LinkFaults faults;
  faults.loss = 35;  // per cable: ~10% end to end over three cables
  faults.duplicate = 50;
  faults.reorder = 100;
  const Row clean = Run(messages, nullptr);
  const Row faulty = Run(messages, &faults);
  const auto& f = faulty.result;
  const double loss = static_cast<double>(f.lost) / static_cast<double>(f.lost + f.carried);
  std::printf(
      "---------------------------------------------------------------------------------\n");
  std::printf(" RC SENDs (1..3000 B, MTU 1024) across 2 switches, exactly-once in-order checked\n");
  std::printf(
      "---------------------------------------------------------------------------------\n");
  std::printf(" %-8s %-10s %-12s %-10s %-10s %-10s %-10s\n", "fabric", "messages", "msgs/s", "lost",
              "dups", "reorders", "ratio");
  std::printf(" %-8s %-10u %-12.0f %-10s %-10s %-10s %-10s\n", "clean", messages,
              messages / clean.seconds, "0", "0", "0", "1.00");
  std::printf(" %-8s %-10u %-12.0f %-10llu %-10llu %-10llu %-10.2f\n", "faulty", messages,
              messages / faulty.seconds, static_cast<unsigned long long>(f.lost),
              static_cast<unsigned long long>(f.duplicated),
              static_cast<unsigned long long>(f.reordered), clean.seconds / faulty.seconds);
  std::printf(
      "---------------------------------------------------------------------------------\n");
  std::printf(" faulty: %.1f%% of packets lost per cable (%.1f%% end to end), all %u messages\n",
              100 * loss, 100 * (1 - (1 - loss) * (1 - loss) * (1 - loss)), messages);
  std::printf(" delivered once, in order, byte for byte; ratio = faulty rate / clean rate\n");
  return 0;
}
