// softib_tap_pair: two TAP faces (ulp/ipoib/tap) joined by a trivial forwarder — each frame
// the host sends on one is delivered to the host on the other, unchanged — with each TAP in
// its own network namespace and address. It is the ceiling of any TAP face on this machine
// (the IPoIB floor, bench/ipoib_floor.sh) and the TAP-pair ping test's link.
//   softib_tap_pair --netns A,B --addr 198.18.0.1/24,198.18.0.2/24 [--mtu 2044]
//                   [--name-prefix sibp] [--ready-fd FD]
// Runs until SIGTERM/SIGINT, then prints the faces' counters. Errors: one line, exit 1.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "softib/ipoib/link_config.h"
#include "softib/ipoib/tap_face.h"

namespace {

using softib::ipoib::TapFace;
namespace link = softib::ipoib::link;

int Fail(const std::string& message) {
  std::fprintf(stderr, "softib_tap_pair: error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> netns, addrs;
  uint32_t mtu = 2044;
  std::string prefix = "sibp" + std::to_string(getpid() % 100000);
  int ready_fd = -1;
  CLI::App app{"softib_tap_pair: two TAPs in two namespaces joined by a frame forwarder"};
  app.add_option("--netns", netns, "the two namespaces (NS_A,NS_B), which must exist")
      ->required()
      ->expected(2)
      ->delimiter(',');
  app.add_option("--addr", addrs, "the two addresses (A/LEN,B/LEN)")
      ->required()
      ->expected(2)
      ->delimiter(',');
  app.add_option("--mtu", mtu, "both TAPs' MTU")
      ->check(CLI::Range(68u, softib::ipoib::kTapMaxMtu))
      ->capture_default_str();
  app.add_option("--name-prefix", prefix, "the TAPs are PREFIXa and PREFIXb");
  app.add_option("--ready-fd", ready_fd, "gets \"ready\\n\" once both TAPs are up");
  CLI11_PARSE(app, argc, argv);

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  std::unique_ptr<TapFace> face[2];
  std::string error;
  for (int i = 0; i < 2; ++i) {
    softib::ipoib::TapConfig config;
    config.name = prefix + (i == 0 ? "a" : "b");
    config.mac = {0x02, 0x5B, 0x7A, 0x00, 0x00, static_cast<uint8_t>(i + 1)};
    config.mtu = mtu;
    config.carrier = true;
    face[i] = TapFace::Create(config, &error);
    if (!face[i]) return Fail(error);
  }
  face[0]->Start([peer = face[1].get()](std::span<const uint8_t> f) { peer->DeliverToHost(f); });
  face[1]->Start([peer = face[0].get()](std::span<const uint8_t> f) { peer->DeliverToHost(f); });
  for (int i = 0; i < 2; ++i) {
    const std::string& name = face[i]->name();
    if (!link::MoveToNetns(name, netns[i], &error) ||
        !link::AddAddress(name, netns[i], addrs[i], &error) ||
        !link::SetLinkUp(name, netns[i], true, &error)) {
      return Fail(error);
    }
    std::printf("softib_tap_pair: %s in %s, %s, MTU %u\n", name.c_str(), netns[i].c_str(),
                addrs[i].c_str(), face[i]->mtu());
  }
  std::printf("softib_tap_pair: ready\n");
  std::fflush(stdout);
  if (ready_fd >= 0) {
    static const char kReady[] = "ready\n";
    ssize_t n;
    do {
      n = write(ready_fd, kReady, sizeof kReady - 1);
    } while (n < 0 && errno == EINTR);
    close(ready_fd);
  }
  int signal_number = 0;
  while (sigwait(&stop, &signal_number) != 0) {
  }
  for (auto& f : face) f->Stop();
  for (auto& f : face) {
    const softib::ipoib::TapCounters c = f->counters();
    std::printf(
        "softib_tap_pair: %s: from host %lu frames %lu bytes, to host %lu frames %lu "
        "bytes, %lu dropped\n",
        f->name().c_str(), static_cast<unsigned long>(c.from_host_frames),
        static_cast<unsigned long>(c.from_host_bytes), static_cast<unsigned long>(c.to_host_frames),
        static_cast<unsigned long>(c.to_host_bytes), static_cast<unsigned long>(c.to_host_dropped));
  }
  return 0;
}
