#include "internal_sm.h"

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

#include "light_host_rmpp.h"
#include "softib/sm/al_mad_port.h"
#include "softib/sm/subnet_manager.h"

namespace softib::softibd {

namespace {

constexpr uint8_t kDirectedRouteClass = 0x81;
constexpr uint8_t kLidRoutedClass = 0x01;
constexpr unsigned kInternalSmWindow = 256;
// The requester's AL ACKs within a millisecond here, and gives a whole query ~3 s (softib-sm
// --query: 3 tries of 1 s): a lost segment or ACK costs one ACK timeout, so a short one (the
// AL's 1 s would fail a table at 1 % loss); 10 in a row (2 s of silence) end the transfer.
constexpr std::chrono::milliseconds kRmppAckTimeout{200};
constexpr uint32_t kRmppRetries = 10;

// Received MADs wait here between the fabric's thread (which appends under the light
// host's lock) and the SM's thread (which takes the whole queue at once).
class LightHostMadPort final : public sm::MadPort {
 public:
  LightHostMadPort(fabric::LightHost* host, uint8_t port) : host_(host), port_(port) {
    host_->SetAbove([this](const hca::Hca::ManagementDatagram& origin,
                           std::span<const uint8_t> mad) { Arrived(origin, mad); });
  }
  ~LightHostMadPort() override { host_->SetAbove(nullptr); }

  sm::PortStatus Send(const sm::MadBytes& mad, const sm::MadAddress& to, int) override {
    const bool smp = mad[1] == kDirectedRouteClass || mad[1] == kLidRoutedClass;
    // The port's own SMA: a HopCount-0 SMP, or one LID-routed to our own LID, is answered
    // by the port as the LocalMad verb would (IBA 14.2.2: it does not reach the wire).
    if (smp && ((mad[1] == kDirectedRouteClass && mad[7] == 0) ||
                (mad[1] == kLidRoutedClass && to.lid == host_->lid(port_)))) {
      sm::ReceivedMad answer;
      if (!host_->LocalMad(port_, mad, answer.mad)) return Failed(mad, to);
      answer.from = to;
      Push(std::move(answer));
      return sm::PortStatus::kOk;
    }
    // Held until the SM next waits for answers: its whole window then reaches the fabric's
    // thread in one wake-up instead of one per SMP. Always the whole MAD (to.length is for
    // requesters over umad2sim): a short MAD would be no MAD at the far port.
    outbox_.push_back({mad, to, false});
    return sm::PortStatus::kOk;
  }

  std::size_t MaxRmppBytes() const override { return sm::AlMaxRmppBytes(); }

  // The transfer's first window goes with the SM's next wait; ACKs and timeouts move it on
  // in Receive.
  sm::PortStatus SendRmpp(std::span<const uint8_t> transfer, const sm::MadAddress& to) override {
    std::vector<RmppTransfers::Segment> segments;
    if (transfer.size() > MaxRmppBytes() ||
        !rmpp_.Start(transfer, to, RmppTransfers::Clock::now(), segments)) {
      last_error_ = "an RMPP transfer of " + std::to_string(transfer.size()) + " bytes";
      return sm::PortStatus::kError;
    }
    Queue(segments);
    return sm::PortStatus::kOk;
  }

  // RMPP ACKs, STOPs and ABORTs are the transfers' (RmppTransfers), never the SM's, and an
  // RMPP request reaches the SM whole; the ACK timeouts run from this loop's clock.
  sm::PortStatus Receive(sm::ReceivedMad& out, int timeout_ms) override {
    using Clock = RmppTransfers::Clock;
    const Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    std::vector<RmppTransfers::Segment> segments;
    for (;;) {
      while (!taken_.empty()) {
        sm::ReceivedMad in = std::move(taken_.front());
        taken_.pop_front();
        if (!in.send_failed && RmppTransfers::IsControl(in.mad)) {
          rmpp_.OnControl(in.mad, in.from, Clock::now(), segments);
          Queue(segments);
          continue;
        }
        if (!in.send_failed && RmppTransfers::IsRequestData(in.mad)) {
          const bool whole =
              rmpp_.OnRequestData(in.mad, in.from, Clock::now(), segments, in.transfer);
          Queue(segments);
          if (!whole) continue;
          // As the AL's MadPort gives it: `mad` holds the transfer's first bytes.
          in.mad.fill(0);
          std::memcpy(in.mad.data(), in.transfer.data(),
                      std::min(in.transfer.size(), in.mad.size()));
        }
        out = std::move(in);
        return sm::PortStatus::kOk;
      }
      Clock::time_point now = Clock::now();
      rmpp_.OnTimer(now, segments);
      Queue(segments);
      Flush();  // the answers taken last time are used up: what they caused goes out
      Clock::time_point until = deadline;
      if (const auto due = rmpp_.NextDeadline(); due && *due < until) until = *due;
      std::unique_lock<std::mutex> lock(mutex_);
      if (queue_.empty() && until > now) {
        waiting_ = true;
        arrived_.wait_until(lock, until, [this] { return !queue_.empty(); });
        waiting_ = false;
      }
      taken_.swap(queue_);
      if (taken_.empty() && Clock::now() >= deadline) return sm::PortStatus::kTimeout;
    }
  }

  std::string Describe() const override {
    return "light host " + std::to_string(host_->guid()) + " port " + std::to_string(port_);
  }
  std::string LastError() const override { return last_error_; }

 private:
  // On the fabric's thread, the light host's lock held.
  void Arrived(const hca::Hca::ManagementDatagram& origin, std::span<const uint8_t> mad) {
    sm::ReceivedMad in;
    std::memcpy(in.mad.data(), mad.data(), std::min(mad.size(), in.mad.size()));
    in.from.lid = origin.slid;
    in.from.qpn = origin.src_qp;
    in.from.sl = origin.sl;
    Push(std::move(in));
  }
  void Push(sm::ReceivedMad&& in) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(in));
    if (waiting_) {
      waiting_ = false;  // one wake-up: what arrives before it runs joins the same batch
      arrived_.notify_one();
    }
  }
  void Queue(std::vector<RmppTransfers::Segment>& segments) {
    for (RmppTransfers::Segment& segment : segments)
      outbox_.push_back({segment.mad, segment.to, true});
    segments.clear();
  }
  void Flush() {
    for (const Outgoing& o : outbox_) {
      hca::Hca::ManagementAddress address;
      address.dlid = o.to.lid;
      address.sl = o.to.sl;
      address.remote_qpn = o.to.qpn;
      address.remote_qkey = o.to.qkey;
      const uint32_t qpn = o.to.qpn == 0 ? hca::kSmiQpn : hca::kGsiQpn;
      // A lost segment is the transfer's to repeat (its ACK timeout), not the SM's.
      if (!host_->SendFromAbove(port_, qpn, address, o.mad) && !o.rmpp) (void)Failed(o.mad, o.to);
    }
    outbox_.clear();
  }
  // What the transport does with a send it cannot deliver: hand it back at once.
  sm::PortStatus Failed(const sm::MadBytes& mad, const sm::MadAddress& to) {
    sm::ReceivedMad back;
    back.mad = mad;
    back.from = to;
    back.send_failed = true;
    Push(std::move(back));
    return sm::PortStatus::kOk;
  }

  fabric::LightHost* host_;
  const uint8_t port_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<sm::ReceivedMad> queue_;  // mutex_
  bool waiting_ = false;               // mutex_: the SM sleeps in Receive
  std::deque<sm::ReceivedMad> taken_;  // the SM's thread only
  struct Outgoing {
    sm::MadBytes mad;
    sm::MadAddress to;
    bool rmpp;  // a segment of an RMPP transfer
  };
  std::vector<Outgoing> outbox_;  // the SM's thread only: sent at its next Receive
  RmppTransfers rmpp_{kRmppAckTimeout, kRmppRetries};  // the SM's thread only
  std::string last_error_ = "the port dropped the MAD";
};

}  // namespace

std::unique_ptr<sm::MadPort> MakeLightHostMadPort(fabric::LightHost* host, uint8_t port) {
  return std::make_unique<LightHostMadPort>(host, port);
}

InternalSm::InternalSm(fabric::LightHost* host, Options options)
    : host_(host), options_(std::move(options)) {}

void InternalSm::Start() {
  port_ = MakeLightHostMadPort(host_, 1);
  thread_ = std::thread([this] { Run(); });
}

void InternalSm::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  port_.reset();
}

void InternalSm::Run() {
  sm::SmOptions options;
  options.verify_lfts = options_.verify_lfts;
  options.partitions = options_.partitions;
  options.fast_bringup = true;  // softib's switches forward VL15 through Init/Armed ports
  // No sockets and no other process between the SM and the fabric: a wider window means
  // fewer hand-overs between the two threads per SMP (each wake-up carries more).
  options.tx.window = kInternalSmWindow;
  sm::SubnetManager manager(*port_, options);
  sm::SweepReport report = manager.Sweep();
  manager.Announce(stdout, report, "first sweep");
  if (!options_.summary_path.empty()) {
    if (std::FILE* f = std::fopen(options_.summary_path.c_str(), "w")) {
      std::fprintf(f, "%s\n", report.Summary(manager.subnet()).c_str());
      std::fclose(f);
    }
  }
  if (report.ok() || report.role == sm::SmState::kStandby) (void)manager.Run(&stop_, stdout);
}

}  // namespace softib::softibd
