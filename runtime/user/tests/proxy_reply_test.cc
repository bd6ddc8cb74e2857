// The generated user proxies against a fake device that answers with whatever the test
// sets: an answer shorter than the verb's output is MALFORMED_REPLY (device_io.h:
// ReplyShape), synchronous and overlapped alike, never zero-filled output with the kernel's
// SUCCESS.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "softib/channel/server.h"
#include "softib/user/completion_event.h"
#include "softib/user/device_io.h"
#include "test_sink.h"
#include "user/verbs_ca_proxy.h"

namespace softib::user {
namespace {

// Completes every request at once with the status and output bytes the test set last.
class ScriptedSink : public channel::IoctlSink {
 public:
  void Answer(Status status, std::vector<uint8_t> output) {
    std::lock_guard lock(mutex_);
    status_ = status;
    output_ = std::move(output);
  }
  void Submit(channel::FileContext& file, channel::PendingRequest request) override {
    std::lock_guard lock(mutex_);
    file.Complete(request.request_id, status_, output_);
  }
  void Cancel(channel::FileContext&, uint64_t) override {}
  void Close(channel::FileContext&) override {}

 private:
  std::mutex mutex_;
  Status status_ = Status::SUCCESS;
  std::vector<uint8_t> output_;
};

template <typename T>
std::vector<uint8_t> BytesOf(const T& value) {
  std::vector<uint8_t> bytes(sizeof(T));
  std::memcpy(bytes.data(), &value, sizeof(T));
  return bytes;
}

// A QueryCaOut naming `num_ports` ports, followed by `sent` of them (port i has LID i + 1).
std::vector<uint8_t> QueryCaAnswer(uint32_t num_ports, uint32_t sent) {
  abi::QueryCaOut out{};
  out.num_ports = num_ports;
  std::vector<uint8_t> bytes = BytesOf(out);
  for (uint32_t i = 0; i < sent; ++i) {
    abi::PortAttributes port{};
    port.lid = static_cast<uint16_t>(i + 1);
    const std::vector<uint8_t> more = BytesOf(port);
    bytes.insert(bytes.end(), more.begin(), more.end());
  }
  return bytes;
}

class ProxyReplyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(server_.Start(dir_.path(), "dev", &error)) << error;
    ASSERT_EQ(OpenDevice(server_.socket_path().c_str(), &device_), Status::SUCCESS);
  }
  void TearDown() override {
    if (device_ != nullptr) {
      EXPECT_EQ(CloseDevice(device_), Status::SUCCESS);
    }
    server_.Stop();
  }

  channel::test::RunDir dir_;
  ScriptedSink sink_;
  channel::Server server_{&sink_};
  DeviceHandle device_ = nullptr;
};

TEST_F(ProxyReplyTest, FixedOutputShorterThanItsStructureIsMalformed) {
  abi::OpenCaOut whole{};
  whole.ca.value = 0x1234;
  std::vector<uint8_t> answer = BytesOf(whole);

  abi::OpenCaOut out{};
  sink_.Answer(Status::SUCCESS, answer);
  EXPECT_EQ(proxy::OpenCa(device_, {}, out), Status::SUCCESS);
  EXPECT_EQ(out.ca.value, 0x1234u);

  answer.pop_back();  // 7 of 8 bytes
  sink_.Answer(Status::SUCCESS, answer);
  EXPECT_EQ(proxy::OpenCa(device_, {}, out), Status::MALFORMED_REPLY);

  sink_.Answer(Status::SUCCESS, {});  // SUCCESS with nothing at all
  EXPECT_EQ(proxy::OpenCa(device_, {}, out), Status::MALFORMED_REPLY);

  // A failure may carry no output (the dispatch refused the request); some output, but too
  // little, is malformed whatever the status.
  sink_.Answer(Status::INVALID_CA_HANDLE, {});
  EXPECT_EQ(proxy::OpenCa(device_, {}, out), Status::INVALID_CA_HANDLE);
  sink_.Answer(Status::INVALID_CA_HANDLE, answer);
  EXPECT_EQ(proxy::OpenCa(device_, {}, out), Status::MALFORMED_REPLY);

  // A verb without output takes an empty SUCCESS.
  sink_.Answer(Status::SUCCESS, {});
  EXPECT_EQ(proxy::CloseCa(device_, {}), Status::SUCCESS);
}

TEST_F(ProxyReplyTest, VariableOutputMustCarryTheElementsItsCountNames) {
  abi::QueryCaOut out{};
  std::vector<abi::PortAttributes> ports(4);

  sink_.Answer(Status::SUCCESS, QueryCaAnswer(2, 2));
  EXPECT_EQ(proxy::QueryCa(device_, {}, out, ports), Status::SUCCESS);
  EXPECT_EQ(out.num_ports, 2u);
  EXPECT_EQ(ports[0].lid, 1);
  EXPECT_EQ(ports[1].lid, 2);

  sink_.Answer(Status::SUCCESS, QueryCaAnswer(2, 1));  // names 2, carries 1
  EXPECT_EQ(proxy::QueryCa(device_, {}, out, ports), Status::MALFORMED_REPLY);

  std::vector<uint8_t> cut = QueryCaAnswer(0, 0);
  cut.resize(cut.size() - 4);  // the structure itself is short
  sink_.Answer(Status::SUCCESS, cut);
  EXPECT_EQ(proxy::QueryCa(device_, {}, out, ports), Status::MALFORMED_REPLY);

  // A failure's count may name what the caller would need, without the elements.
  sink_.Answer(Status::INSUFFICIENT_MEMORY, QueryCaAnswer(5, 0));
  EXPECT_EQ(proxy::QueryCa(device_, {}, out, ports), Status::INSUFFICIENT_MEMORY);
  EXPECT_EQ(out.num_ports, 5u);

  // More ports than the caller's buffer holds: the kernel sends what fits.
  std::vector<abi::PortAttributes> two(2);
  sink_.Answer(Status::SUCCESS, QueryCaAnswer(5, 2));
  EXPECT_EQ(proxy::QueryCa(device_, {}, out, two), Status::SUCCESS);
  EXPECT_EQ(out.num_ports, 5u);
  EXPECT_EQ(two[1].lid, 2);
  sink_.Answer(Status::SUCCESS, QueryCaAnswer(5, 1));
  EXPECT_EQ(proxy::QueryCa(device_, {}, out, two), Status::MALFORMED_REPLY);
}

TEST_F(ProxyReplyTest, OverlappedFormsCompleteWithTheSameStatus) {
  abi::OpenCaOut whole{};
  whole.ca.value = 0x77;
  std::vector<uint8_t> answer = BytesOf(whole);
  answer.resize(3);
  sink_.Answer(Status::SUCCESS, answer);

  CompletionEvent event;
  Overlapped ov{};
  ov.Event = &event;
  abi::OpenCaOut out{};
  ASSERT_EQ(proxy::OpenCaAsync(device_, {}, out, &ov), Status::PENDING);
  event.Wait();
  uint32_t bytes = 0;
  EXPECT_EQ(GetOverlappedResult(device_, &ov, &bytes, true), Status::MALFORMED_REPLY);
  EXPECT_EQ(ov.Internal, Status::MALFORMED_REPLY);
  EXPECT_EQ(bytes, 3u);  // as received

  sink_.Answer(Status::SUCCESS, BytesOf(whole));
  Overlapped ok{};
  ASSERT_EQ(proxy::OpenCaAsync(device_, {}, out, &ok), Status::PENDING);
  EXPECT_EQ(GetOverlappedResult(device_, &ok, &bytes, true), Status::SUCCESS);
  EXPECT_EQ(bytes, sizeof(abi::OpenCaOut));
  EXPECT_EQ(out.ca.value, 0x77u);

  // The variable form: the count names 3 ports, 2 arrive, the buffer holds 4.
  alignas(8) uint8_t output[sizeof(abi::QueryCaOut) + 4 * sizeof(abi::PortAttributes)] = {};
  sink_.Answer(Status::SUCCESS, QueryCaAnswer(3, 2));
  Overlapped var{};
  ASSERT_EQ(proxy::QueryCaAsync(device_, {}, output, sizeof output, &var), Status::PENDING);
  EXPECT_EQ(GetOverlappedResult(device_, &var, &bytes, true), Status::MALFORMED_REPLY);
  sink_.Answer(Status::SUCCESS, QueryCaAnswer(3, 3));
  Overlapped var_ok{};
  ASSERT_EQ(proxy::QueryCaAsync(device_, {}, output, sizeof output, &var_ok), Status::PENDING);
  EXPECT_EQ(GetOverlappedResult(device_, &var_ok, &bytes, true), Status::SUCCESS);
  EXPECT_EQ(bytes, sizeof(abi::QueryCaOut) + 3 * sizeof(abi::PortAttributes));

  // A refusal without output keeps its status.
  sink_.Answer(Status::INVALID_PARAMETER, {});
  Overlapped refused{};
  ASSERT_EQ(proxy::QueryCaAsync(device_, {}, output, sizeof output, &refused), Status::PENDING);
  EXPECT_EQ(GetOverlappedResult(device_, &refused, &bytes, true), Status::INVALID_PARAMETER);
  EXPECT_EQ(bytes, 0u);
}

}  // namespace
}  // namespace softib::user
