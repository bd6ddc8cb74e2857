// The channel end to end inside one process: device_io.h on the client side, the server
// with a TestSink on the kernel side.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "softib/channel/server.h"
#include "softib/user/completion_event.h"
#include "softib/user/device_io.h"
#include "test_sink.h"

namespace softib::channel::test {
namespace {

using user::CompletionEvent;
using user::DeviceHandle;
using user::Overlapped;
using namespace std::chrono_literals;

class ChannelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(server_.Start(run_dir_.path(), "dev", &error)) << error;
  }

  DeviceHandle Open() {
    DeviceHandle device = nullptr;
    EXPECT_EQ(user::OpenDevice(server_.socket_path().c_str(), &device), Status::SUCCESS);
    return device;
  }

  // A round trip through the server's loop thread on `device` (another file): the loop ran
  // everything it had queued before (deferred closes run first in each of its turns, and
  // the echo takes more than one), so what the sink would have been told by now, it was.
  void LoopBarrier(DeviceHandle device) {
    uint32_t returned = 0;
    char answer[7] = {};
    EXPECT_EQ(user::DeviceIoControl(device, kEcho, "barrier", 7, answer, 7, &returned, nullptr),
              Status::SUCCESS);
    EXPECT_EQ(std::string(answer, returned), "barrier");
  }

  RunDir run_dir_;
  TestSink sink_;
  Server server_{&sink_};
};

size_t OpenFdCount() {
  auto entries = std::filesystem::directory_iterator("/proc/self/fd");
  return static_cast<size_t>(std::distance(begin(entries), end(entries)));
}

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

TEST_F(ChannelTest, SyncRoundTrip) {
  DeviceHandle device = Open();
  std::vector<uint8_t> in = Bytes("query ca attributes"), out(64, 0xee);
  uint32_t returned = 0;
  ASSERT_EQ(user::DeviceIoControl(device, kEcho, in.data(), in.size(), out.data(), out.size(),
                                  &returned, nullptr),
            Status::SUCCESS);
  ASSERT_EQ(returned, in.size());
  EXPECT_TRUE(std::equal(in.begin(), in.end(), out.begin()));
  EXPECT_EQ(out[in.size()], 0xee);  // nothing past the returned bytes

  // Output longer than the caller's buffer is cut to it (METHOD_BUFFERED).
  uint8_t small[5] = {};
  ASSERT_EQ(user::DeviceIoControl(device, kEcho, in.data(), in.size(), small, sizeof small,
                                  &returned, nullptr),
            Status::SUCCESS);
  EXPECT_EQ(returned, 5u);
  EXPECT_EQ(std::memcmp(small, "query", 5), 0);

  // The sink's status comes back unchanged.
  EXPECT_EQ(user::DeviceIoControl(device, 0x999, nullptr, 0, nullptr, 0, &returned, nullptr),
            Status::INVALID_PARAMETER);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
  EXPECT_EQ(sink_.closes(), 1u);  // cleanup ran before CloseDevice returned
  EXPECT_EQ(sink_.violations(), 0);
}

TEST_F(ChannelTest, ClientRejectsBadArguments) {
  DeviceHandle device = Open();
  uint32_t returned;
  EXPECT_EQ(user::DeviceIoControl(nullptr, kEcho, nullptr, 0, nullptr, 0, &returned, nullptr),
            Status::INVALID_HANDLE);
  EXPECT_EQ(user::DeviceIoControl(device, kEcho, nullptr, 4, nullptr, 0, &returned, nullptr),
            Status::INVALID_PARAMETER);
  std::vector<uint8_t> huge(kMaxInputBytes + 1);
  EXPECT_EQ(user::DeviceIoControl(device, kEcho, huge.data(), huge.size(), nullptr, 0, &returned,
                                  nullptr),
            Status::INVALID_PARAMETER);
  EXPECT_EQ(user::CancelIoEx(device, nullptr), Status::NOT_FOUND);
  user::CloseDevice(device);
}

TEST_F(ChannelTest, OpenMissingDeviceIsNotFound) {
  DeviceHandle device = nullptr;
  std::string path = run_dir_.path() + "/nothing";
  EXPECT_EQ(user::OpenDevice(path.c_str(), &device), Status::NOT_FOUND);
  std::string long_path(200, 'x');
  EXPECT_EQ(user::OpenDevice(long_path.c_str(), &device), Status::INVALID_PARAMETER);
}

TEST_F(ChannelTest, OverlappedCompletesOutOfOrder) {
  DeviceHandle device = Open();
  constexpr int kCount = 8;
  Overlapped ov[kCount] = {};
  CompletionEvent events[kCount];
  uint32_t out[kCount] = {};
  for (int i = 0; i < kCount; ++i) {
    ov[i].Event = &events[i];
    uint32_t tag = 1000 + i;
    ASSERT_EQ(user::DeviceIoControl(device, kHold, &tag, sizeof tag, &out[i], sizeof out[i],
                                    nullptr, &ov[i]),
              Status::PENDING);
  }
  ASSERT_TRUE(sink_.WaitHeld(kCount));
  auto held = sink_.TakeHeld();
  ASSERT_EQ(held.size(), size_t{kCount});
  // Complete last-first; each completion must reach exactly its own Overlapped.
  for (int i = kCount - 1; i >= 0; --i) {
    auto& h = held[i];
    ASSERT_TRUE(h.file->Complete(h.request.request_id, Status::SUCCESS, h.request.input));
    ASSERT_TRUE(events[i].WaitFor(10s));
    uint32_t returned = 0;
    ASSERT_EQ(user::GetOverlappedResult(device, &ov[i], &returned, false), Status::SUCCESS);
    EXPECT_EQ(returned, 4u);
    EXPECT_EQ(out[i], 1000u + i);
    for (int j = 0; j < i; ++j) {
      EXPECT_FALSE(events[j].IsSet()) << j;
      EXPECT_EQ(user::GetOverlappedResult(device, &ov[j], &returned, false), Status::PENDING);
    }
  }
  // A second completion of the same request is refused.
  EXPECT_FALSE(held[0].file->Complete(held[0].request.request_id, Status::SUCCESS));
  user::CloseDevice(device);
  EXPECT_EQ(sink_.violations(), 0);
}

TEST_F(ChannelTest, CancelPendingRequest) {
  DeviceHandle device = Open();
  Overlapped ov = {};
  CompletionEvent event;
  ov.Event = &event;
  uint32_t out = 0;
  ASSERT_EQ(user::DeviceIoControl(device, kHold, nullptr, 0, &out, sizeof out, nullptr, &ov),
            Status::PENDING);
  ASSERT_TRUE(sink_.WaitHeld(1));
  EXPECT_EQ(user::CancelIoEx(device, &ov), Status::SUCCESS);
  uint32_t returned = 99;
  EXPECT_EQ(user::GetOverlappedResult(device, &ov, &returned, true), Status::CANCELED);
  EXPECT_EQ(returned, 0u);
  EXPECT_TRUE(event.IsSet());
  EXPECT_EQ(sink_.cancels().size(), 1u);
  // Nothing left to cancel.
  EXPECT_EQ(user::CancelIoEx(device, &ov), Status::NOT_FOUND);

  // Cancel-all reaches every pending request, including a synchronous one in another thread.
  Overlapped many[3] = {};
  for (auto& o : many) {
    ASSERT_EQ(user::DeviceIoControl(device, kHold, nullptr, 0, nullptr, 0, nullptr, &o),
              Status::PENDING);
  }
  Status sync_status = Status::SUCCESS;
  std::thread sync_caller([&] {
    sync_status = user::DeviceIoControl(device, kHold, nullptr, 0, nullptr, 0, nullptr, nullptr);
  });
  ASSERT_TRUE(sink_.WaitHeld(4));
  EXPECT_EQ(user::CancelIoEx(device, nullptr), Status::SUCCESS);
  for (auto& o : many) {
    EXPECT_EQ(user::GetOverlappedResult(device, &o, nullptr, true), Status::CANCELED);
  }
  sync_caller.join();
  EXPECT_EQ(sync_status, Status::CANCELED);
  EXPECT_EQ(sink_.cancels().size(), 5u);
  user::CloseDevice(device);
  EXPECT_EQ(sink_.violations(), 0);
}

TEST_F(ChannelTest, ConcurrentRequestsFromFourThreads) {
  DeviceHandle device = Open();
  constexpr int kThreads = 4, kPerThread = 400;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string payload = "t" + std::to_string(t) + "-" + std::to_string(i);
        payload.resize(8 + (i * 37) % 600, static_cast<char>('a' + t));
        std::vector<uint8_t> out(1024);
        uint32_t returned = 0;
        uint32_t code = (i % 2) ? kEchoAsync : kEcho;
        Status s;
        if (i % 3 == 0) {
          Overlapped ov = {};
          s = user::DeviceIoControl(device, code, payload.data(), payload.size(), out.data(),
                                    out.size(), nullptr, &ov);
          if (s == Status::PENDING) s = user::GetOverlappedResult(device, &ov, &returned, true);
        } else {
          s = user::DeviceIoControl(device, code, payload.data(), payload.size(), out.data(),
                                    out.size(), &returned, nullptr);
        }
        if (s != Status::SUCCESS || returned != payload.size() ||
            std::memcmp(out.data(), payload.data(), returned) != 0) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(server_.stats().requests, uint64_t{kThreads * kPerThread});
  user::CloseDevice(device);
}

TEST_F(ChannelTest, FileDescriptorPassing) {
  DeviceHandle device = Open();
  std::string text = "ring buffer contents";
  uint32_t size = 0, returned = 0, fd_count = 0;
  int fds[2] = {-1, -1};
  ASSERT_EQ(user::DeviceIoControlWithFds(device, kMemfd, text.data(), text.size(), &size,
                                         sizeof size, &returned, fds, 2, &fd_count),
            Status::SUCCESS);
  ASSERT_EQ(fd_count, 1u);
  EXPECT_EQ(size, text.size());
  // Both sides map the same memory: the kernel's text is visible here, and ours there.
  void* mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fds[0], 0);
  ASSERT_NE(mem, MAP_FAILED);
  EXPECT_EQ(std::string(static_cast<char*>(mem), text.size()), text);
  std::memcpy(static_cast<char*>(mem) + 100, "from user", 9);
  char seen[9] = {};
  ASSERT_EQ(pread(sink_.last_memfd(), seen, sizeof seen, 100), 9);
  EXPECT_EQ(std::string(seen, 9), "from user");
  munmap(mem, 4096);
  close(fds[0]);

  // Without a place for them, received fds are closed, not leaked: only the sink's own
  // memfd is new.
  size_t before = OpenFdCount();
  ASSERT_EQ(user::DeviceIoControl(device, kMemfd, text.data(), text.size(), &size, sizeof size,
                                  &returned, nullptr),
            Status::SUCCESS);
  EXPECT_EQ(OpenFdCount(), before + 1);
  user::CloseDevice(device);
}

TEST_F(ChannelTest, CloseCancelsPendingThenClosesOnce) {
  DeviceHandle device = Open();
  Overlapped ov[3] = {};
  for (auto& o : ov) {
    ASSERT_EQ(user::DeviceIoControl(device, kHold, nullptr, 0, nullptr, 0, nullptr, &o),
              Status::PENDING);
  }
  ASSERT_TRUE(sink_.WaitHeld(3));
  ASSERT_EQ(user::CloseDevice(device), Status::SUCCESS);
  // The results arrived before CloseDevice returned.
  for (auto& o : ov) EXPECT_EQ(o.Internal, Status::CANCELED);
  EXPECT_EQ(sink_.cancels().size(), 3u);
  EXPECT_EQ(sink_.closes(), 1u);
  EXPECT_EQ(sink_.violations(), 0);
  EXPECT_EQ(server_.open_files(), 0u);
}

// A raw connection, to speak the protocol badly or vanish without a close frame.
class RawClient {
 public:
  explicit RawClient(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RawClient() { Close(); }
  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }
  void Send(const void* data, size_t size, int fd_to_send = -1) {
    iovec iov{const_cast<void*>(data), size};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (fd_to_send >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* c = CMSG_FIRSTHDR(&msg);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(c), &fd_to_send, sizeof(int));
    }
    ASSERT_EQ(sendmsg(fd_, &msg, MSG_NOSIGNAL), static_cast<ssize_t>(size));
  }
  void Send(const RequestHeader& h, size_t extra = 0) {
    std::vector<uint8_t> frame(sizeof h + extra, 0);
    std::memcpy(frame.data(), &h, sizeof h);
    Send(frame.data(), frame.size());
  }
  // The next response frame (header only; asserts on timeout).
  ResponseHeader Receive(std::vector<uint8_t>* payload = nullptr) {
    std::vector<uint8_t> buffer(kMaxResponseFrameBytes);
    ssize_t r = recv(fd_, buffer.data(), buffer.size(), 0);
    ResponseHeader h{};
    EXPECT_GE(r, static_cast<ssize_t>(sizeof h));
    if (r >= static_cast<ssize_t>(sizeof h)) std::memcpy(&h, buffer.data(), sizeof h);
    if (payload && r > static_cast<ssize_t>(sizeof h))
      payload->assign(buffer.begin() + sizeof h, buffer.begin() + r);
    return h;
  }

 private:
  int fd_ = -1;
};

RequestHeader Ioctl(uint64_t id, uint32_t code, uint32_t input_length, uint32_t output_length) {
  RequestHeader h{};
  h.magic = kFrameMagic;
  h.version = kProtocolVersion;
  h.kind = static_cast<uint16_t>(FrameKind::kIoctl);
  h.request_id = id;
  h.ioctl_code = code;
  h.input_length = input_length;
  h.output_length = output_length;
  return h;
}

void ExpectEchoWorks(RawClient& raw, uint64_t id) {
  raw.Send(Ioctl(id, kEcho, 4, 16), 4);
  ResponseHeader r = raw.Receive();
  EXPECT_EQ(r.kind, static_cast<uint16_t>(FrameKind::kIoctl));
  EXPECT_EQ(r.request_id, id);
  EXPECT_EQ(r.status, static_cast<uint32_t>(Status::SUCCESS));
  EXPECT_EQ(r.information, 4u);
}

TEST_F(ChannelTest, MalformedFramesAreRejectedAndConnectionSurvives) {
  RawClient raw(server_.socket_path());
  struct Case {
    const char* name;
    std::vector<uint8_t> frame;
    RejectReason reason;
    uint64_t id;  // the request id the reject names
  };
  auto frame_of = [](RequestHeader h, size_t extra = 0) {
    std::vector<uint8_t> f(sizeof h + extra, 0);
    std::memcpy(f.data(), &h, sizeof h);
    return f;
  };
  std::vector<Case> cases;
  cases.push_back({"empty", {}, RejectReason::kShortFrame, 0});
  cases.push_back({"short", std::vector<uint8_t>(10, 0x53), RejectReason::kShortFrame, 0});
  RequestHeader h = Ioctl(7, kEcho, 0, 0);
  h.magic = 0xdeadbeef;
  cases.push_back({"magic", frame_of(h), RejectReason::kBadMagic, 0});
  h = Ioctl(7, kEcho, 0, 0);
  h.version = 2;
  cases.push_back({"version", frame_of(h), RejectReason::kBadVersion, 7});
  h = Ioctl(7, kEcho, 0, 0);
  h.kind = 9;
  cases.push_back({"kind", frame_of(h), RejectReason::kBadKind, 7});
  h = Ioctl(7, kEcho, 0, 0);
  h.kind = static_cast<uint16_t>(FrameKind::kReject);
  cases.push_back({"reject kind from client", frame_of(h), RejectReason::kBadKind, 7});
  cases.push_back({"id 0", frame_of(Ioctl(0, kEcho, 0, 0)), RejectReason::kBadRequestId, 0});
  cases.push_back({"input longer than frame", frame_of(Ioctl(7, kEcho, 8, 0), 4),
                   RejectReason::kLengthMismatch, 7});
  cases.push_back({"input shorter than frame", frame_of(Ioctl(7, kEcho, 2, 0), 4),
                   RejectReason::kLengthMismatch, 7});
  cases.push_back({"input over maximum", frame_of(Ioctl(7, kEcho, kMaxInputBytes + 1, 0)),
                   RejectReason::kInputTooLong, 7});
  cases.push_back({"output over maximum", frame_of(Ioctl(7, kEcho, 0, kMaxOutputBytes + 1)),
                   RejectReason::kOutputTooLong, 7});
  cases.push_back({"frame over maximum",
                   frame_of(Ioctl(7, kEcho, kMaxInputBytes + 8, 0), kMaxInputBytes + 8),
                   RejectReason::kFrameTooLong, 7});
  h = Ioctl(7, kEcho, 0, 0);
  h.flags = 4;
  cases.push_back({"ioctl flags", frame_of(h), RejectReason::kBadFlags, 7});
  h = Ioctl(7, 0, 0, 0);
  h.kind = static_cast<uint16_t>(FrameKind::kCancel);
  h.flags = 2;
  cases.push_back({"cancel flags", frame_of(h), RejectReason::kBadFlags, 7});
  h.flags = 0;
  h.output_length = 1;
  cases.push_back({"cancel with lengths", frame_of(h), RejectReason::kBadField, 7});
  h = Ioctl(7, 5, 0, 0);
  h.kind = static_cast<uint16_t>(FrameKind::kClose);
  cases.push_back({"close with code", frame_of(h), RejectReason::kBadField, 7});

  uint64_t next_good = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    raw.Send(c.frame.data(), c.frame.size());
    ResponseHeader r = raw.Receive();
    EXPECT_EQ(r.magic, kFrameMagic);
    EXPECT_EQ(r.kind, static_cast<uint16_t>(FrameKind::kReject));
    EXPECT_EQ(r.reject_reason, static_cast<uint32_t>(c.reason))
        << RejectReasonName(static_cast<RejectReason>(r.reject_reason));
    EXPECT_EQ(r.request_id, c.id);
    EXPECT_EQ(r.status, static_cast<uint32_t>(Status::INVALID_PARAMETER));
    ExpectEchoWorks(raw, next_good++);
  }

  {
    SCOPED_TRACE("fds from the client");
    int pipe_fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pipe_fds), 0);
    RequestHeader fh = Ioctl(8, kEcho, 0, 0);
    raw.Send(&fh, sizeof fh, pipe_fds[0]);
    ResponseHeader r = raw.Receive();
    EXPECT_EQ(r.reject_reason, static_cast<uint32_t>(RejectReason::kUnexpectedFds));
    close(pipe_fds[0]);
    // The server closed its copy: the pipe's read end is gone everywhere.
    EXPECT_EQ(send(pipe_fds[1], "x", 1, MSG_NOSIGNAL), -1);
    close(pipe_fds[1]);
    ExpectEchoWorks(raw, next_good++);
  }
  {
    SCOPED_TRACE("duplicate outstanding id");
    raw.Send(Ioctl(50, kHold, 0, 0));
    ASSERT_TRUE(sink_.WaitHeld(1));
    raw.Send(Ioctl(50, kEcho, 0, 0));
    ResponseHeader r = raw.Receive();
    EXPECT_EQ(r.kind, static_cast<uint16_t>(FrameKind::kReject));
    EXPECT_EQ(r.reject_reason, static_cast<uint32_t>(RejectReason::kBadRequestId));
    ExpectEchoWorks(raw, next_good++);
  }
  EXPECT_EQ(server_.stats().rejected_frames, cases.size() + 2);

  // The server still serves others.
  DeviceHandle device = Open();
  uint32_t returned;
  EXPECT_EQ(user::DeviceIoControl(device, kEcho, "ok", 2, nullptr, 0, &returned, nullptr),
            Status::SUCCESS);
  user::CloseDevice(device);
}

TEST_F(ChannelTest, ClientThatDoesNotReadGetsEveryAnswerInOrder) {
  // Far more answers than the socket buffers hold: the server queues a bounded number, stops
  // reading this client meanwhile, and delivers everything once the client reads again.
  RawClient raw(server_.socket_path());
  constexpr uint64_t kFrames = 3000;
  constexpr uint32_t kBytes = 2000;
  std::thread sender([&] {
    std::vector<uint8_t> frame(sizeof(RequestHeader) + kBytes, 0x5a);
    for (uint64_t id = 1; id <= kFrames; ++id) {
      RequestHeader h = Ioctl(id, kEcho, kBytes, kBytes);
      std::memcpy(frame.data(), &h, sizeof h);
      raw.Send(frame.data(), frame.size());
    }
  });
  // Read nothing until the server holds as many answers as it queues for one file (it stops
  // reading the file then).
  for (int i = 0; i < 10000 && server_.stats().queued_responses < kMaxQueuedResponses; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  ASSERT_GE(server_.stats().queued_responses, kMaxQueuedResponses);
  for (uint64_t id = 1; id <= kFrames; ++id) {
    std::vector<uint8_t> payload;
    ResponseHeader r = raw.Receive(&payload);
    ASSERT_EQ(r.request_id, id);
    ASSERT_EQ(r.information, kBytes);
    ASSERT_EQ(payload.size(), kBytes);
    ASSERT_EQ(payload[kBytes - 1], 0x5a);
  }
  sender.join();
  EXPECT_EQ(server_.stats().rejected_frames, 0u);
  EXPECT_EQ(server_.stats().requests, kFrames);
  EXPECT_GT(server_.stats().queued_responses, 0u);  // the queue really was used
}

TEST_F(ChannelTest, HangUpCancelsThenClosesOnceAfterLastCompletion) {
  DeviceHandle barrier = Open();  // a second file, for round trips through the loop
  RawClient raw(server_.socket_path());
  raw.Send(Ioctl(1, kHold, 0, 0));
  raw.Send(Ioctl(2, kHoldStubborn, 0, 0));  // the sink does not complete this one on cancel
  raw.Send(Ioctl(3, kHold, 0, 0));
  ASSERT_TRUE(sink_.WaitHeld(3));
  raw.Close();  // the process "dies": no close frame
  // Every request hears its cancel; Close waits for the stubborn one.
  for (int i = 0; i < 500 && sink_.cancels().size() < 3; ++i) std::this_thread::sleep_for(2ms);
  auto cancels = sink_.cancels();
  std::sort(cancels.begin(), cancels.end());
  EXPECT_EQ(cancels, (std::vector<uint64_t>{1, 2, 3}));
  LoopBarrier(barrier);
  EXPECT_EQ(sink_.closes(), 0u);
  auto held = sink_.TakeHeld();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].request.request_id, 2u);
  // Completing for a process that is gone is fine, from any thread.
  std::thread([&] { EXPECT_TRUE(held[0].file->Complete(2, Status::SUCCESS)); }).join();
  ASSERT_TRUE(sink_.WaitClosed(1));
  LoopBarrier(barrier);  // a second Close of the file would have come by now
  EXPECT_EQ(sink_.closes(), 1u);
  EXPECT_EQ(sink_.violations(), 0);
  user::CloseDevice(barrier);
  EXPECT_TRUE(sink_.WaitClosed(2));
  EXPECT_TRUE(WaitNoOpenFiles(server_));
}

TEST_F(ChannelTest, ServerStopFailsClientsCleanly) {
  DeviceHandle device = Open();
  Overlapped ov = {};
  ASSERT_EQ(user::DeviceIoControl(device, kHold, nullptr, 0, nullptr, 0, nullptr, &ov),
            Status::PENDING);
  ASSERT_TRUE(sink_.WaitHeld(1));
  server_.Stop();  // cancels the held request (CANCELED), closes the file, hangs up
  EXPECT_EQ(user::GetOverlappedResult(device, &ov, nullptr, true), Status::CANCELED);
  EXPECT_EQ(sink_.closes(), 1u);
  uint32_t returned;
  EXPECT_EQ(user::DeviceIoControl(device, kEcho, "x", 1, nullptr, 0, &returned, nullptr),
            user::kChannelBroken);
  EXPECT_EQ(user::CloseDevice(device), Status::SUCCESS);
}

}  // namespace
}  // namespace softib::channel::test
