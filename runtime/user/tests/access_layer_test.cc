// The user AL's entry points without a node: where the default node is looked for, and
// what an open finds when nothing listens there (the rest runs against softibd in
// tests/integration).
#include "softib/user/access_layer.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace softib::user {
namespace {

// Sets or clears an environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) {
      old_ = old;
      had_ = true;
    }
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

TEST(AccessLayerTest, DefaultRunDirPrefersSoftibRunDirThenXdg) {
  {
    ScopedEnv run("SOFTIB_RUN_DIR", "/somewhere/node");
    ScopedEnv xdg("XDG_RUNTIME_DIR", "/run/user/7");
    EXPECT_EQ(DefaultRunDir(), "/somewhere/node");
  }
  {
    ScopedEnv run("SOFTIB_RUN_DIR", nullptr);
    ScopedEnv xdg("XDG_RUNTIME_DIR", "/run/user/7");
    EXPECT_EQ(DefaultRunDir(), "/run/user/7/softib");
  }
  {
    ScopedEnv run("SOFTIB_RUN_DIR", "");
    ScopedEnv xdg("XDG_RUNTIME_DIR", nullptr);
    EXPECT_EQ(DefaultRunDir(), "/tmp/softib-" + std::to_string(getuid()));
  }
}

TEST(AccessLayerTest, NoNodeListeningIsNotFound) {
  std::string dir = std::filesystem::temp_directory_path() / "softib-user-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  AlFile al;
  EXPECT_EQ(OpenAl(dir.c_str(), &al), Status::NOT_FOUND);
  EXPECT_EQ(al.device, nullptr);
  {
    ScopedEnv run("SOFTIB_RUN_DIR", dir.c_str());
    EXPECT_EQ(OpenAl(nullptr, &al), Status::NOT_FOUND);
  }
  EXPECT_EQ(CloseAl(&al), Status::INVALID_PARAMETER);
  std::filesystem::remove_all(dir);
}

// qemu's reading of $QEMU_GUEST_BASE (hex or decimal); a 64-bit build never takes it.
TEST(AccessLayerTest, DmaAddressOffsetIsQemusGuestBaseIn32BitBuildsOnly) {
  const uint64_t expected = sizeof(void*) == 4 ? 0x100000000ull : 0;
  {
    ScopedEnv base("QEMU_GUEST_BASE", "0x100000000");
    EXPECT_EQ(DmaAddressOffset(), expected);
  }
  {
    ScopedEnv base("QEMU_GUEST_BASE", "4294967296");
    EXPECT_EQ(DmaAddressOffset(), expected);
  }
  {
    ScopedEnv base("QEMU_GUEST_BASE", "");
    EXPECT_EQ(DmaAddressOffset(), 0u);
  }
  {
    ScopedEnv base("QEMU_GUEST_BASE", nullptr);
    EXPECT_EQ(DmaAddressOffset(), 0u);
  }
}

}  // namespace
}  // namespace softib::user
