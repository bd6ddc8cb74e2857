// The HcaConformanceHarness of the generated CI conformance suite (ci_hca_conformance.cc):
// one CA of an HCA driver on a node of its own, reached with internal IOCTL IRPs as the
// Access Layer reaches it. SOFTIB_CI_PEND=1 runs the suite in the driver's pend mode, where
// the harness also checks that every request pended (and was completed later).
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "hca_dispatch_support.h"
#include "softib/ci/ci.h"
#include "softib/hca/hca_driver.h"
#include "softib/kernel/device.h"
#include "softib/kernel/io.h"
#include "softib/kernel/node.h"

namespace softib::conformance {
namespace {

using kernel::Status;

constexpr uint64_t kGuid = 0x0002C90300CC0001ull;

bool PendModeFromEnvironment() {
  const char* pend = std::getenv("SOFTIB_CI_PEND");
  return pend != nullptr && std::string(pend) == "1";
}

class HcaHarness final : public HcaConformanceHarness {
 public:
  void Boot() {
    pend_ = PendModeFromEnvironment();
    ASSERT_EQ(hca::LoadHcaDriver(&node_, &driver_), Status::SUCCESS);
    hca::HcaConfig config;
    config.node_guid = kGuid;
    config.pend_ci = pend_;
    ASSERT_EQ(hca::HcaAddCa(driver_, config, 1), Status::SUCCESS);
    const std::string name = ci::CaDeviceName(kGuid);
    device_ = kernel::IoGetDeviceByName(&node_, name.c_str());
    ASSERT_NE(device_, nullptr);
    ASSERT_EQ(kernel::IoCreateFile(&node_, name.c_str(), kernel::ProcessorMode::kKernelMode,
                                   &kernel_file_),
              Status::SUCCESS);
    ASSERT_EQ(kernel::IoCreateFileForProcess(&node_, name.c_str(), getpid(), &user_file_),
              Status::SUCCESS);
  }

  void Shutdown() {
    if (kernel_file_ != nullptr) kernel::IoCloseFile(kernel_file_);
    if (user_file_ != nullptr) kernel::IoCloseFile(user_file_);
    if (driver_ != nullptr) {
      hca::HcaRemoveCa(driver_, kGuid);
      if (device_ != nullptr) kernel::ObDereferenceObject(device_);
      hca::UnloadHcaDriver(driver_);
    }
  }

  HcaCallResult Ioctl(uint32_t code, HcaRequestor who, std::span<const uint8_t> input,
                      uint32_t out_length) override {
    std::vector<uint8_t> output(out_length);
    kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(
        code, device_, input.empty() ? nullptr : input.data(), static_cast<uint32_t>(input.size()),
        output.data(), out_length, true);
    if (irp == nullptr) return {};
    kernel::FileObject* file = nullptr;
    switch (who) {
      case HcaRequestor::kKernel:
        file = kernel_file_;
        break;
      case HcaRequestor::kKernelNoFile:
      case HcaRequestor::kUserNoFile:
        break;
      case HcaRequestor::kUser:
      case HcaRequestor::kForgedKernel:
        file = user_file_;
        break;
      case HcaRequestor::kUserOnKernelFile:
        file = kernel_file_;
        break;
    }
    const bool user = who == HcaRequestor::kUser || who == HcaRequestor::kUserOnKernelFile ||
                      who == HcaRequestor::kUserNoFile;
    irp->RequestorMode =
        user ? kernel::ProcessorMode::kUserMode : kernel::ProcessorMode::kKernelMode;
    kernel::IoGetNextIrpStackLocation(irp)->FileObject = file;
    Seen seen;
    kernel::IoSetCompletionRoutine(irp, &Record, &seen, true, true, true);
    HcaCallResult result;
    result.status = kernel::IoCallDriverAndWait(device_, irp);
    result.information = seen.information;
    if (pend_) {
      EXPECT_TRUE(seen.pended) << "pend mode: IOCTL 0x" << std::hex << code << " completed inline";
    }
    return result;
  }

 private:
  struct Seen {
    uint64_t information = 0;
    bool pended = false;
  };
  static kernel::CompletionAction Record(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
    auto* seen = static_cast<Seen*>(context);
    seen->information = irp->IoStatus.Information;
    seen->pended = irp->PendingReturned;
    return kernel::CompletionAction::kContinueCompletion;
  }

  bool pend_ = false;
  kernel::Node node_{kernel::NodeOptions{"ci-conformance", 2}};
  hca::HcaDriver* driver_ = nullptr;
  kernel::DeviceObject* device_ = nullptr;
  kernel::FileObject* kernel_file_ = nullptr;
  kernel::FileObject* user_file_ = nullptr;
};

HcaHarness* g_harness = nullptr;

// Boots the CA before the first test and takes it down after the last (not at static
// destruction, when the node's threads could already be gone).
class HarnessEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g_harness = new HcaHarness;
    g_harness->Boot();
  }
  void TearDown() override {
    g_harness->Shutdown();
    delete g_harness;
    g_harness = nullptr;
  }
};
const bool kRegistered = (::testing::AddGlobalTestEnvironment(new HarnessEnvironment), true);

}  // namespace

HcaConformanceHarness& HcaConformanceHarness::Instance() { return *g_harness; }

}  // namespace softib::conformance
