// The run directory: created with parents, locked against a second daemon, pid file.
#include "run_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.h"

namespace softib::softibd::test {
namespace {

TEST(RunDirTest, CreatesWithParentsAndLocks) {
  TempDir temp;
  const std::string path = temp.path() + "/a/b";
  std::string error;
  RunDir first;
  ASSERT_TRUE(first.Acquire(path, &error)) << error;
  EXPECT_TRUE(std::filesystem::is_directory(path));

  RunDir second;
  EXPECT_FALSE(second.Acquire(path, &error));
  EXPECT_NE(error.find("another softibd"), std::string::npos) << error;
}

TEST(RunDirTest, LockIsReleasedAtDestruction) {
  TempDir temp;
  std::string error;
  {
    RunDir first;
    ASSERT_TRUE(first.Acquire(temp.path(), &error)) << error;
  }
  RunDir again;
  EXPECT_TRUE(again.Acquire(temp.path(), &error)) << error;
}

TEST(RunDirTest, NotADirectory) {
  TempDir temp;
  const std::string file = temp.path() + "/file";
  std::ofstream(file) << "x";
  RunDir run_dir;
  std::string error;
  EXPECT_FALSE(run_dir.Acquire(file, &error));
  EXPECT_FALSE(error.empty());
}

TEST(RunDirTest, PidFileHoldsPidUntilDestruction) {
  TempDir temp;
  const std::string pidfile = temp.path() + "/softibd.pid";
  std::string error;
  {
    RunDir run_dir;
    ASSERT_TRUE(run_dir.Acquire(temp.path(), &error)) << error;
    ASSERT_TRUE(run_dir.WritePidFile(pidfile, &error)) << error;
    std::ifstream in(pidfile);
    pid_t pid = 0;
    in >> pid;
    EXPECT_EQ(pid, getpid());
  }
  EXPECT_FALSE(std::filesystem::exists(pidfile));
}

}  // namespace
}  // namespace softib::softibd::test
