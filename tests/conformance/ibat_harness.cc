// The DeviceConformanceHarness of the generated IBAT conformance suite
// (ibat_device_conformance.cc, idl/ibat.idl): the IPoIB driver loaded on a node of its own
// (no CA: no interface, so every valid request reaches ibat.h and answers from an empty
// driver), its "ibat" device reached with IRP_MJ_DEVICE_CONTROL IRPs as the bridge sends a
// user process's requests and as a kernel client would.
#include <unistd.h>

#include <cstring>
#include <vector>

#include "device_dispatch_support.h"
#include "softib/ipoib/ibat_device.h"
#include "softib/ipoib/ipoib.h"
#include "softib/kernel/device.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"
#include "softib/kernel/node.h"

namespace softib::conformance {
namespace {

using kernel::Status;

class IbatHarness final : public DeviceConformanceHarness {
 public:
  void Boot() {
    ASSERT_EQ(ipoib::LoadDriver(&node_, &driver_), Status::SUCCESS);
    device_ = kernel::IoGetDeviceByName(&node_, ipoib::kIbatDeviceName);
    ASSERT_NE(device_, nullptr);
    ASSERT_EQ(kernel::IoCreateFile(&node_, ipoib::kIbatDeviceName,
                                   kernel::ProcessorMode::kKernelMode, &kernel_file_),
              Status::SUCCESS);
    ASSERT_EQ(kernel::IoCreateFileForProcess(&node_, ipoib::kIbatDeviceName, getpid(), &user_file_),
              Status::SUCCESS);
  }

  void Shutdown() {
    if (kernel_file_ != nullptr) kernel::IoCloseFile(kernel_file_);
    if (user_file_ != nullptr) kernel::IoCloseFile(user_file_);
    if (device_ != nullptr) kernel::ObDereferenceObject(device_);
    if (driver_ != nullptr) ipoib::UnloadDriver(driver_);
  }

  DeviceCallResult Ioctl(uint32_t code, DeviceRequestor who, std::span<const uint8_t> input,
                         uint32_t out_length) override {
    std::vector<uint8_t> output(out_length);
    kernel::Irp* irp = kernel::IoBuildDeviceIoControlRequest(
        code, device_, input.empty() ? nullptr : input.data(), static_cast<uint32_t>(input.size()),
        output.data(), out_length, false);
    if (irp == nullptr) return {};
    kernel::FileObject* file = nullptr;
    switch (who) {
      case DeviceRequestor::kKernel:
      case DeviceRequestor::kKernelAtDispatch:
      case DeviceRequestor::kUserOnKernelFile:
        file = kernel_file_;
        break;
      case DeviceRequestor::kKernelNoFile:
      case DeviceRequestor::kUserNoFile:
        break;
      case DeviceRequestor::kUser:
      case DeviceRequestor::kForgedKernel:
        file = user_file_;
        break;
    }
    const bool user = who == DeviceRequestor::kUser || who == DeviceRequestor::kUserOnKernelFile ||
                      who == DeviceRequestor::kUserNoFile;
    irp->RequestorMode =
        user ? kernel::ProcessorMode::kUserMode : kernel::ProcessorMode::kKernelMode;
    kernel::IoGetNextIrpStackLocation(irp)->FileObject = file;
    Seen seen;
    kernel::IoSetCompletionRoutine(irp, &Record, &seen, true, true, true);
    DeviceCallResult result;
    if (who == DeviceRequestor::kKernelAtDispatch) {
      // A verb callable at DISPATCH never blocks: its IRP completes before IoCallDriver returns.
      const kernel::ScopedIrql raised(kernel::Irql::kDispatch);
      result.status = kernel::IoCallDriver(device_, irp);
      EXPECT_TRUE(seen.completed) << "IOCTL 0x" << std::hex << code << " pended at DISPATCH";
    } else {
      result.status = kernel::IoCallDriverAndWait(device_, irp);
    }
    result.information = seen.information;
    return result;
  }

 private:
  struct Seen {
    uint64_t information = 0;
    bool completed = false;
  };
  static kernel::CompletionAction Record(kernel::DeviceObject*, kernel::Irp* irp, void* context) {
    auto* seen = static_cast<Seen*>(context);
    seen->information = irp->IoStatus.Information;
    seen->completed = true;
    return kernel::CompletionAction::kContinueCompletion;
  }

  kernel::Node node_{kernel::NodeOptions{"ibat-conformance", 2}};
  ipoib::Driver* driver_ = nullptr;
  kernel::DeviceObject* device_ = nullptr;
  kernel::FileObject* kernel_file_ = nullptr;
  kernel::FileObject* user_file_ = nullptr;
};

IbatHarness* g_harness = nullptr;

// Loads the driver before the first test and unloads it after the last.
class HarnessEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g_harness = new IbatHarness;
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

DeviceConformanceHarness& DeviceConformanceHarness::Instance() { return *g_harness; }

}  // namespace softib::conformance
