// Driver, device and file objects: namespace, open/close IRPs, references, unload.
#include <gtest/gtest.h>

#include <cstring>

#include "softib/kernel/device.h"
#include "softib/kernel/io.h"
#include "softib/kernel/node.h"
#include "test_driver.h"

namespace softib::kernel {
namespace {

using testing::CompleteIrp;

TEST(Device, NamesAreUniquePerNode) {
  Node node;
  testing::TestDriver driver(node, "d");
  ASSERT_NE(driver.CreateDevice("hca0"), nullptr);
  DeviceObject* duplicate = nullptr;
  EXPECT_EQ(IoCreateDevice(driver.driver(), 0, "hca0", 0, &duplicate), Status::RESOURCE_BUSY);
  EXPECT_EQ(node.device_count(), 1u);
  DeviceObject* found = IoGetDeviceByName(&node, "hca0");
  ASSERT_NE(found, nullptr);
  ObDereferenceObject(found);
  EXPECT_EQ(IoGetDeviceByName(&node, "hca1"), nullptr);
}

TEST(Device, ExtensionIsZeroedAndAligned) {
  Node node;
  testing::TestDriver driver(node, "d");
  DeviceObject* device = nullptr;
  ASSERT_EQ(IoCreateDevice(driver.driver(), 40, nullptr, 7, &device), Status::SUCCESS);
  ASSERT_NE(device->DeviceExtension, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(device->DeviceExtension) % 16, 0u);
  const uint8_t zeros[40] = {};
  EXPECT_EQ(std::memcmp(device->DeviceExtension, zeros, 40), 0);
  EXPECT_EQ(device->DeviceType, 7u);
  EXPECT_EQ(device->StackSize, 1);
  IoDeleteDevice(device);
}

TEST(Device, OpenSendsCreateToTheTopOfTheStackAndCloseSendsCleanupThenClose) {
  Node node;
  testing::TestDriver bus(node, "bus");
  testing::TestDriver function(node, "function");
  DeviceObject* pdo = bus.CreateDevice("ipoib0");
  DeviceObject* fdo = function.CreateDevice();
  function.Attach(fdo, pdo);
  FileObject* file = nullptr;
  ASSERT_EQ(IoCreateFile(&node, "ipoib0", ProcessorMode::kUserMode, &file), Status::SUCCESS);
  EXPECT_EQ(file->DeviceObject, fdo);
  EXPECT_EQ(function.last_mode(), ProcessorMode::kUserMode);
  EXPECT_EQ(function.seen(), std::vector<IrpMajor>{IrpMajor::kCreate});
  EXPECT_TRUE(bus.seen().empty());

  // A user DeviceIoControl arrives with the file and the user's RequestorMode.
  function.OnIrp(fdo, [file](DeviceObject*, Irp* irp) {
    const bool ok = IoGetCurrentIrpStackLocation(irp)->FileObject == file &&
                    irp->RequestorMode == ProcessorMode::kUserMode;
    std::memcpy(irp->AssociatedIrp.SystemBuffer, "ok", 2);
    return CompleteIrp(irp, ok ? Status::SUCCESS : Status::ERROR, 2);
  });
  char output[2] = {};
  uint64_t information = 0;
  EXPECT_EQ(IoDeviceIoControlFile(file, 0x22, nullptr, 0, output, 2, ProcessorMode::kUserMode,
                                  &information),
            Status::SUCCESS);
  EXPECT_EQ(information, 2u);
  EXPECT_EQ(std::memcmp(output, "ok", 2), 0);
  function.OnIrp(fdo, nullptr);

  IoCloseFile(file);
  EXPECT_EQ(function.seen(), (std::vector<IrpMajor>{IrpMajor::kCreate, IrpMajor::kDeviceControl,
                                                    IrpMajor::kCleanup, IrpMajor::kClose}));
}

TEST(Device, AFailedCreateLeavesNoFile) {
  Node node;
  testing::TestDriver driver(node, "d");
  DeviceObject* device = driver.CreateDevice("locked");
  driver.OnIrp(
      device, [](DeviceObject*, Irp* irp) { return CompleteIrp(irp, Status::INVALID_PERMISSION); });
  FileObject* file = nullptr;
  EXPECT_EQ(IoCreateFile(&node, "locked", ProcessorMode::kUserMode, &file),
            Status::INVALID_PERMISSION);
  EXPECT_EQ(file, nullptr);
  EXPECT_EQ(IoCreateFile(&node, "absent", ProcessorMode::kUserMode, &file), Status::NOT_FOUND);
}

TEST(Device, ADeletedDeviceLivesUntilItsLastReference) {
  Node node;
  testing::TestDriver driver(node, "d");
  DeviceObject* device = driver.CreateDevice("going");
  ObReferenceObject(device);  // e.g. an AL client's reference
  driver.Delete(device);
  EXPECT_EQ(IoGetDeviceByName(&node, "going"), nullptr);  // the name goes at once
  EXPECT_EQ(node.device_count(), 1u);
  // Still a valid target for the holder of the reference.
  Irp* irp = IoBuildDeviceIoControlRequest(1, device, nullptr, 0, nullptr, 0, false);
  EXPECT_EQ(IoCallDriverAndWait(device, irp), Status::SUCCESS);
  ObDereferenceObject(device);
  EXPECT_EQ(node.device_count(), 0u);
}

TEST(Device, UnloadCallsTheDriverAndTheDriverGoesWithItsLastDevice) {
  Node node;
  testing::TestDriver driver(node, "d");
  DeviceObject* device = driver.CreateDevice("a");
  driver.CreateDevice("b");
  ObReferenceObject(device);
  EXPECT_EQ(node.driver_count(), 1u);
  driver.Unload();  // deletes both devices
  EXPECT_EQ(node.device_count(), 1u);
  EXPECT_EQ(node.driver_count(), 1u);  // kept by the referenced device
  ObDereferenceObject(device);
  EXPECT_EQ(node.device_count(), 0u);
  EXPECT_EQ(node.driver_count(), 0u);
}

}  // namespace
}  // namespace softib::kernel
