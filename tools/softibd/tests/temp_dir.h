// A fresh mkdtemp directory, removed with its contents at destruction.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace softib::softibd::test {

class TempDir {
 public:
  TempDir() {
    std::string pattern = std::filesystem::temp_directory_path() / "softibd-test-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace softib::softibd::test
