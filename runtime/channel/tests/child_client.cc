// The client half of the integration test, as its own process (also built -m32, to talk
// to the 64-bit server). Usage: channel_child_client <socket> work|hold
//   work: sync, overlapped and fd-passing requests, then close; exit 0 when all matched.
//   hold: three requests the kernel holds, then wait to be killed.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "softib/user/completion_event.h"
#include "softib/user/device_io.h"
#include "test_sink.h"

using namespace softib;
using channel::test::kEcho;
using channel::test::kEchoAsync;
using channel::test::kHold;
using channel::test::kMemfd;

namespace {

int Fail(const char* what, user::Status status) {
  std::fprintf(stderr, "child: %s: status %u\n", what, static_cast<unsigned>(status));
  return 1;
}

int Work(user::DeviceHandle device) {
  char out[64] = {};
  uint32_t returned = 0;
  user::Status s =
      user::DeviceIoControl(device, kEcho, "hello", 5, out, sizeof out, &returned, nullptr);
  if (s != user::Status::SUCCESS || returned != 5 || std::memcmp(out, "hello", 5) != 0) {
    return Fail("sync echo", s);
  }
  user::Overlapped ov = {};
  user::CompletionEvent event;
  ov.Event = &event;
  s = user::DeviceIoControl(device, kEchoAsync, "overlapped", 10, out, sizeof out, nullptr, &ov);
  if (s != user::Status::PENDING) return Fail("overlapped submit", s);
  event.Wait();
  s = user::GetOverlappedResult(device, &ov, &returned, false);
  if (s != user::Status::SUCCESS || returned != 10 || std::memcmp(out, "overlapped", 10) != 0) {
    return Fail("overlapped result", s);
  }
  int fd = -1;
  uint32_t count = 0, size = 0;
  s = user::DeviceIoControlWithFds(device, kMemfd, "shared", 6, &size, sizeof size, &returned, &fd,
                                   1, &count);
  if (s != user::Status::SUCCESS || count != 1 || size != 6) return Fail("memfd", s);
  void* mem = mmap(nullptr, 4096, PROT_READ, MAP_SHARED, fd, 0);
  if (mem == MAP_FAILED || std::memcmp(mem, "shared", 6) != 0) return Fail("memfd map", s);
  munmap(mem, 4096);
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <socket> work|hold\n", argv[0]);
    return 2;
  }
  user::DeviceHandle device = nullptr;
  user::Status s = user::OpenDevice(argv[1], &device);
  if (s != user::Status::SUCCESS) return Fail("open", s);
  std::string mode = argv[2];
  if (mode == "hold") {
    static user::Overlapped ov[3] = {};
    for (auto& o : ov) {
      s = user::DeviceIoControl(device, kHold, nullptr, 0, nullptr, 0, nullptr, &o);
      if (s != user::Status::PENDING) return Fail("hold", s);
    }
    for (;;) pause();
  }
  int rc = Work(device);
  s = user::CloseDevice(device);
  if (s != user::Status::SUCCESS) return Fail("close", s);
  if (rc == 0) std::printf("child: all requests matched (%zu-bit)\n", sizeof(void*) * 8);
  return rc;
}
