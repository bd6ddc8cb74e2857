// The client half of the bridge integration test, as its own process.
// Usage: bridge_child_client <socket> work|hold
//   work: echo, requestor mode, bad length, pend + release, cancel; exit 0 when all matched.
//   hold: three IOCTLs the driver pends, then wait to be killed.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "bridge_test_ioctls.h"
#include "softib/user/completion_event.h"
#include "softib/user/device_io.h"

using namespace softib;
using namespace softib::bridge::test;
using user::Status;

namespace {

int Fail(const char* what, Status status) {
  std::fprintf(stderr, "bridge child: %s: status %u\n", what, static_cast<unsigned>(status));
  return 1;
}

int Work(user::DeviceHandle device) {
  char out[64] = {};
  uint32_t returned = 0;
  Status s =
      user::DeviceIoControl(device, kEcho, "from child", 10, out, sizeof out, &returned, nullptr);
  if (s != Status::SUCCESS || returned != 10 || std::memcmp(out, "from child", 10) != 0) {
    return Fail("echo", s);
  }
  uint8_t mode = 0;
  s = user::DeviceIoControl(device, kMode, nullptr, 0, &mode, 1, &returned, nullptr);
  if (s != Status::SUCCESS || mode != 1) return Fail("requestor mode", s);
  char big[kMaxEcho + 1] = {};
  s = user::DeviceIoControl(device, kEcho, big, sizeof big, big, sizeof big, &returned, nullptr);
  if (s != Status::INVALID_PARAMETER) return Fail("bad length", s);

  // Inverted call: pend, release, then the pended one completes.
  user::Overlapped pended = {};
  user::CompletionEvent pended_done;
  pended.Event = &pended_done;
  s = user::DeviceIoControl(device, kPend, nullptr, 0, out, sizeof out, nullptr, &pended);
  if (s != Status::PENDING) return Fail("pend", s);
  // The release may overtake the pend on its way to the driver: repeat until it lands.
  while (!pended_done.WaitFor(std::chrono::milliseconds(20))) {
    s = user::DeviceIoControl(device, kRelease, nullptr, 0, nullptr, 0, nullptr, nullptr);
    if (s != Status::SUCCESS) return Fail("release", s);
  }
  s = user::GetOverlappedResult(device, &pended, &returned, false);
  if (s != Status::SUCCESS || returned != 8 || std::memcmp(out, kReleased, 8) != 0) {
    return Fail("released result", s);
  }

  // Cancel: the driver's queue hands it back CANCELED.
  user::Overlapped cancelled = {};
  user::CompletionEvent cancelled_done;
  cancelled.Event = &cancelled_done;
  s = user::DeviceIoControl(device, kPend, nullptr, 0, nullptr, 0, nullptr, &cancelled);
  if (s != Status::PENDING) return Fail("pend to cancel", s);
  s = user::CancelIoEx(device, &cancelled);
  if (s != Status::SUCCESS) return Fail("CancelIoEx", s);
  s = user::GetOverlappedResult(device, &cancelled, &returned, true);
  if (s != Status::CANCELED) return Fail("cancelled result", s);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <socket> work|hold\n", argv[0]);
    return 2;
  }
  user::DeviceHandle device = nullptr;
  Status s = user::OpenDevice(argv[1], &device);
  if (s != Status::SUCCESS) return Fail("open", s);
  if (std::string(argv[2]) == "hold") {
    static user::Overlapped ov[3] = {};
    for (auto& o : ov) {
      s = user::DeviceIoControl(device, kPend, nullptr, 0, nullptr, 0, nullptr, &o);
      if (s != Status::PENDING) return Fail("hold", s);
    }
    for (;;) pause();
  }
  const int rc = Work(device);
  s = user::CloseDevice(device);
  if (s != Status::SUCCESS) return Fail("close", s);
  return rc;
}
