// The callers a verb can come from, each with its own handle table: a user process's file
// over the channel (generated proxy, or raw DeviceIoControl), a user-mode file opened in
// process (raw IRPs, for the fuzz targets), a kernel client's AL instance (generated direct
// calls, optionally at DISPATCH) and a kernel client's open file (generated IRP builders).
// Every Send takes the verb's input bytes and returns status, information and output.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "conformance_harness.h"
#include "fuzz/verb_model.h"
#include "softib/kernel/device.h"
#include "softib/kernel/node.h"
#include "softib/user/device_io.h"

namespace softib::conformance {

// What else runs before a wait verb still pending is cancelled, besides the node's DPCs and
// work items: the threads of the harness's own peers (the SA responder answers on a thread of
// its own). Set by the harness that starts them; an empty function clears it.
void SetSettleHook(std::function<void()> hook);

using fuzz::VerbInfo;

class VerbEnv {
 public:
  virtual ~VerbEnv() = default;
  // Sends `verb` (null: an IOCTL code no verb has, raw only) with these bytes.
  virtual CallResult Send(const VerbInfo* verb, uint32_t ioctl, std::span<const uint8_t> input,
                          uint32_t output_length) = 0;
  // Whether the verb can come from this caller at all.
  virtual bool Reaches(const VerbInfo& verb) const = 0;
  // Closes and reopens: everything the caller created is gone, its handle table is new.
  virtual bool Reopen() = 0;
  virtual bool user_mode() const = 0;

  CallResult Send(const VerbInfo& verb, std::span<const uint8_t> input, uint32_t output_length) {
    return Send(&verb, verb.ioctl, input, output_length);
  }
};

// A user process's file of `socket_path`, through the channel, to the in-process `node`.
class ChannelEnv final : public VerbEnv {
 public:
  // `proxy`: the generated proxies (falls back to raw for verbs without one).
  ChannelEnv(std::string socket_path, bool proxy, kernel::Node* node)
      : path_(std::move(socket_path)), proxy_(proxy), node_(node) {}
  ~ChannelEnv() override;
  CallResult Send(const VerbInfo* verb, uint32_t ioctl, std::span<const uint8_t> input,
                  uint32_t output_length) override;
  using VerbEnv::Send;
  bool Reaches(const VerbInfo& verb) const override;
  bool Reopen() override;
  bool user_mode() const override { return true; }
  user::DeviceHandle device() const { return device_; }
  void set_proxy(bool proxy) { proxy_ = proxy; }

 private:
  // A synchronous request the kernel refuses (an IOCTL nobody serves), answered after
  // every request sent on the file before it was dispatched and their answers, if any,
  // were read.
  void RoundTrip();

  std::string path_;
  bool proxy_;
  kernel::Node* node_;
  user::DeviceHandle device_ = nullptr;
};

// A user-mode open of `device_name` made in process (IoCreateFileForProcess); IOCTLs are
// METHOD_BUFFERED IRPs built the way the bridge builds them.
class UserFileEnv final : public VerbEnv {
 public:
  UserFileEnv(kernel::Node* node, std::string device_name, int32_t pid)
      : node_(node), device_name_(std::move(device_name)), pid_(pid) {}
  ~UserFileEnv() override;
  CallResult Send(const VerbInfo* verb, uint32_t ioctl, std::span<const uint8_t> input,
                  uint32_t output_length) override;
  using VerbEnv::Send;
  bool Reaches(const VerbInfo& verb) const override;
  bool Reopen() override;
  bool user_mode() const override { return true; }
  kernel::FileObject* file() const { return file_; }

 private:
  kernel::Node* node_;
  std::string device_name_;
  int32_t pid_;
  kernel::FileObject* file_ = nullptr;
};

// A kernel client's AL instance: Ib<Verb>() direct calls, given an IRP so that async verbs
// complete through it; with `at_dispatch` the call is made at DISPATCH level.
class DirectEnv final : public VerbEnv {
 public:
  DirectEnv(kernel::Node* node, kernel::DeviceObject* client) : node_(node), client_(client) {}
  ~DirectEnv() override;
  CallResult Send(const VerbInfo* verb, uint32_t ioctl, std::span<const uint8_t> input,
                  uint32_t output_length) override;
  using VerbEnv::Send;
  bool Reaches(const VerbInfo& verb) const override;
  bool Reopen() override;
  bool user_mode() const override { return false; }
  void set_at_dispatch(bool at_dispatch) { at_dispatch_ = at_dispatch; }

 private:
  kernel::Node* node_;
  kernel::DeviceObject* client_;
  kernel::IbAl* al_ = nullptr;
  bool at_dispatch_ = false;
};

// A kernel client's open file of `device_name`: IRPs from the generated builders, waited
// for (IoCallDriverAndWait) or completed through a completion routine.
class KernelIrpEnv final : public VerbEnv {
 public:
  KernelIrpEnv(kernel::Node* node, std::string device_name)
      : node_(node), device_name_(std::move(device_name)) {}
  ~KernelIrpEnv() override;
  CallResult Send(const VerbInfo* verb, uint32_t ioctl, std::span<const uint8_t> input,
                  uint32_t output_length) override;
  using VerbEnv::Send;
  bool Reaches(const VerbInfo& verb) const override;
  bool Reopen() override;
  bool user_mode() const override { return false; }
  void set_async(bool async) { async_ = async; }

 private:
  kernel::Node* node_;
  std::string device_name_;
  kernel::FileObject* file_ = nullptr;
  bool async_ = false;
};

// Whether a verb is a wait that may pend until something happens (answers CANCELED when
// cancelled): such a call is cancelled when nothing arrived shortly after it pended.
bool IsWait(const VerbInfo& verb);

}  // namespace softib::conformance
