// ProcessVmDma against a forked child: the HCA reads and writes the child's memory.
#include "hca/device/dma.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>

#include "tied_child.h"

namespace softib::hca {
namespace {

TEST(Dma, ProcessVmReadsAndWritesAChildProcess) {
  // The buffer exists at the same address in the child (fork copies the address space);
  // after the fork the copies are separate, so what the parent sees came from the child.
  static std::array<uint8_t, 4096> buffer;
  buffer.fill(0x11);
  int to_child[2], to_parent[2];
  ASSERT_EQ(pipe(to_child), 0);
  ASSERT_EQ(pipe(to_parent), 0);
  const pid_t parent = getpid();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    test_support::DieWithParent(parent);  // not left blocked in read() if the test dies
    buffer.fill(0x22);
    char c = 0;
    if (write(to_parent[1], &c, 1) != 1) _exit(2);
    if (read(to_child[0], &c, 1) != 1) _exit(2);  // parent wrote into us
    for (std::size_t i = 0; i < 100; ++i)
      if (buffer[i] != (i < 50 ? 0x33 : 0x22)) _exit(1);
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(to_parent[0], &c, 1), 1);
  ProcessVmDma dma(child);
  std::array<uint8_t, 4096> seen{};
  EXPECT_TRUE(dma.Read(reinterpret_cast<uint64_t>(buffer.data()), seen));
  EXPECT_EQ(seen[0], 0x22);
  EXPECT_EQ(seen[4095], 0x22);
  EXPECT_EQ(buffer[0], 0x11);  // ours is untouched
  const std::array<uint8_t, 50> fives = [] {
    std::array<uint8_t, 50> a;
    a.fill(0x33);
    return a;
  }();
  EXPECT_TRUE(dma.Write(reinterpret_cast<uint64_t>(buffer.data()), fives));
  EXPECT_FALSE(dma.Read(0x10, std::span(seen).first(8)));  // unmapped in the child
  ASSERT_EQ(write(to_child[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  for (int fd : {to_child[0], to_child[1], to_parent[0], to_parent[1]}) close(fd);
}

TEST(Dma, MemcpyMovesBytesOfThisProcess) {
  std::array<uint8_t, 8> a{1, 2, 3, 4, 5, 6, 7, 8}, b{};
  MemcpyDma dma;
  EXPECT_TRUE(dma.Read(reinterpret_cast<uint64_t>(a.data()), b));
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace softib::hca
