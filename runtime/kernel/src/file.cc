// File objects: open (IRP_MJ_CREATE) and close (IRP_MJ_CLEANUP, IRP_MJ_CLOSE).
#include "softib/kernel/device.h"
#include "softib/kernel/io.h"
#include "softib/kernel/irql.h"

namespace softib::kernel {
namespace {

Status SendFileIrp(FileObject* file, IrpMajor major) {
  DeviceObject* device = file->DeviceObject;
  Irp* irp = IoAllocateIrp(device->StackSize);
  irp->RequestorMode = file->RequestorMode;
  IoStackLocation* next = IoGetNextIrpStackLocation(irp);
  next->MajorFunction = major;
  next->FileObject = file;
  const Status status = IoCallDriverAndWait(device, irp);
  IoFreeIrp(irp);
  return status;
}

Status CreateFile(Node* node, const char* device_name, ProcessorMode mode, int32_t pid,
                  FileObject** file) {
  VerifyBlockingAllowed("IoCreateFile");
  DeviceObject* named = IoGetDeviceByName(node, device_name);
  if (named == nullptr) return Status::NOT_FOUND;
  DeviceObject* top = IoGetAttachedDeviceReference(named);
  ObDereferenceObject(named);
  auto* opened = new FileObject{};
  opened->DeviceObject = top;
  opened->RequestorMode = mode;
  opened->ProcessId = pid;
  const Status status = SendFileIrp(opened, IrpMajor::kCreate);
  if (status != Status::SUCCESS) {
    delete opened;
    ObDereferenceObject(top);
    return status;
  }
  *file = opened;
  return Status::SUCCESS;
}

}  // namespace

Status IoCreateFile(Node* node, const char* device_name, ProcessorMode mode, FileObject** file) {
  return CreateFile(node, device_name, mode, 0, file);
}

Status IoCreateFileForProcess(Node* node, const char* device_name, int32_t pid,
                              FileObject** file) {
  return CreateFile(node, device_name, ProcessorMode::kUserMode, pid, file);
}

void IoCloseFile(FileObject* file) {
  VerifyBlockingAllowed("IoCloseFile");
  SendFileIrp(file, IrpMajor::kCleanup);
  SendFileIrp(file, IrpMajor::kClose);
  ObDereferenceObject(file->DeviceObject);
  delete file;
}

}  // namespace softib::kernel
