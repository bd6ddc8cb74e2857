// Two real processes over a memfd: the test process is the HCA, a forked child is the
// user process; the fd travels by SCM_RIGHTS as the channel carries it. The child posts
// send requests and polls completions; the HCA pops, checks and completes them. Every wait
// on either side goes through the futex doorbells part of the time.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "test_region.h"
#include "tied_child.h"

namespace softib::rings {
namespace {

using abi::SendWorkRequest;
using abi::WorkCompletion;

void SendFd(int socket, int fd, const void* data, size_t size) {
  iovec iov{const_cast<void*>(data), size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  ASSERT_EQ(sendmsg(socket, &msg, 0), static_cast<ssize_t>(size));
}

int ReceiveFd(int socket, void* data, size_t size) {
  iovec iov{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (recvmsg(socket, &msg, 0) != static_cast<ssize_t>(size)) return -1;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg == nullptr || cmsg->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
  return fd;
}

struct Mappings {
  RingMapping send;
  RingMapping cq;
};

constexpr uint32_t kRequests = 20000;

// The user process: exit code 0 when every completion matched its request.
[[noreturn]] void UserProcess(int socket, bool corrupt) {
  Mappings m{};
  int fd = ReceiveFd(socket, &m, sizeof(m));
  SharedMemory shm;
  std::string error;
  if (fd < 0 || !SharedMemory::Map(fd, &shm, &error)) _exit(10);
  if (!CheckMapping(m.send, shm.size(), RingKind::SEND) ||
      !CheckMapping(m.cq, shm.size(), RingKind::CQ)) {
    _exit(11);
  }
  // The HCA sealed the object: the process cannot shrink it under the HCA.
  if (ftruncate(shm.fd(), 0) == 0) _exit(12);
  RingControl* send_control = ControlAt(shm.base(), m.send);
  if (corrupt) {
    send_control->producer.producer_index = 0xDEADBEEF;
    _exit(0);
  }
  RingProducer<SendWorkRequest> sq(send_control, EntriesAt<SendWorkRequest>(shm.base(), m.send),
                                   m.send.num_entries, Side::kClient);
  RingConsumer<WorkCompletion> cq(ControlAt(shm.base(), m.cq),
                                  EntriesAt<WorkCompletion>(shm.base(), m.cq), m.cq.num_entries,
                                  Side::kClient);
  uint64_t posted = 0, completed = 0;
  while (completed < kRequests) {
    bool progress = false;
    while (posted < kRequests && posted - completed < m.cq.num_entries) {
      SendWorkRequest wr{};
      wr.wr_id = posted;
      wr.num_sge = static_cast<uint32_t>(posted % 3);
      if (!sq.TryPush(wr)) break;
      ++posted;
      progress = true;
    }
    if (progress) sq.Publish();
    WorkCompletion wc{};
    PopResult r;
    while ((r = cq.Pop(&wc)) == PopResult::kEntry) {
      if (wc.wr_id != completed || wc.length != completed % 3) _exit(13);
      ++completed;
      progress = true;
    }
    if (r == PopResult::kError) _exit(14);
    // Sleep every so often so that both doorbell directions are used.
    if (!progress && completed % 7 == 0) cq.Sleep(1000000000);
  }
  _exit(0);
}

pid_t StartUser(const SharedMemory& shm, const Mappings& m, bool corrupt) {
  int sockets[2];
  EXPECT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sockets), 0);
  const pid_t parent = getpid();
  pid_t child = fork();
  if (child == 0) {
    test_support::DieWithParent(parent);  // it dies with the test, however the test ends
    close(sockets[0]);
    UserProcess(sockets[1], corrupt);
  }
  close(sockets[1]);
  SendFd(sockets[0], shm.fd(), &m, sizeof(m));
  close(sockets[0]);
  return child;
}

int WaitExit(pid_t child) {
  int status = 0;
  EXPECT_EQ(waitpid(child, &status, 0), child);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(RingProcessTest, UserProcessPostsAndPollsThroughTheHca) {
  testing::TestRing send = testing::Ring(RingKind::SEND, 16);
  testing::TestRing cq_ring = testing::Ring(RingKind::CQ, 32);
  SharedMemory shm = testing::MakeRegion({&send, &cq_ring});
  RingConsumer<SendWorkRequest> sq(ControlAt(shm.base(), send.mapping),
                                   EntriesAt<SendWorkRequest>(shm.base(), send.mapping), 16,
                                   Side::kHca);
  CqProducer cq(ControlAt(shm.base(), cq_ring.mapping),
                EntriesAt<WorkCompletion>(shm.base(), cq_ring.mapping), 32);
  pid_t child = StartUser(shm, {send.mapping, cq_ring.mapping}, false);
  uint32_t done = 0;
  while (done < kRequests) {
    SendWorkRequest wr{};
    PopResult r = sq.Pop(&wr);
    ASSERT_NE(r, PopResult::kError);
    if (r == PopResult::kEmpty) {
      if (done % 5 == 0) sq.Sleep(1000000000);
      continue;
    }
    ASSERT_EQ(wr.wr_id, done);
    WorkCompletion wc{};
    wc.wr_id = wr.wr_id;
    wc.length = wr.num_sge;
    bool notify = false;
    ASSERT_EQ(cq.Push(wc, false, &notify), CqProducer::PushResult::kPushed);
    ++done;
  }
  EXPECT_EQ(WaitExit(child), 0);
}

TEST(RingProcessTest, CorruptIndexFromAnotherProcessFailsOnlyThatRing) {
  testing::TestRing send = testing::Ring(RingKind::SEND, 16);
  testing::TestRing cq_ring = testing::Ring(RingKind::CQ, 16);
  SharedMemory shm = testing::MakeRegion({&send, &cq_ring});
  RingConsumer<SendWorkRequest> sq(ControlAt(shm.base(), send.mapping),
                                   EntriesAt<SendWorkRequest>(shm.base(), send.mapping), 16,
                                   Side::kHca);
  pid_t child = StartUser(shm, {send.mapping, cq_ring.mapping}, true);
  ASSERT_EQ(WaitExit(child), 0);
  SendWorkRequest wr{};
  EXPECT_EQ(sq.Pop(&wr), PopResult::kError);
  EXPECT_EQ(ControlAt(shm.base(), send.mapping)->status.error, RingError::BAD_PRODUCER_INDEX);
  EXPECT_EQ(ControlAt(shm.base(), cq_ring.mapping)->status.error, RingError::NONE);
}

}  // namespace
}  // namespace softib::rings
