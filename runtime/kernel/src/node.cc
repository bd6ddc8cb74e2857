#include "softib/kernel/node.h"

#include "node_impl.h"

namespace softib::kernel {

Node::Impl::Impl(Node* node, const NodeOptions& options)
    : name(options.name),
      dpc(node),
      work(node, options.worker_threads < 1 ? 1 : options.worker_threads),
      pnp(node) {}

Node::Node(NodeOptions options) : impl_(std::make_unique<Impl>(this, options)) {
  impl_->dpc.Start();
  impl_->work.Start();
}

Node::~Node() {
  // DPCs queue work items and work items queue DPCs: drain until both are quiet together.
  for (;;) {
    impl_->work.WaitIdle();
    while (!impl_->dpc.Idle()) std::this_thread::yield();
    if (impl_->work.Idle() && impl_->dpc.Idle()) break;
  }
  impl_->work.Stop();
  impl_->dpc.Stop();
}

const std::string& Node::name() const { return impl_->name; }

std::size_t Node::device_count() const {
  std::lock_guard lock(impl_->registry.mutex);
  return impl_->registry.devices;
}

std::size_t Node::driver_count() const {
  std::lock_guard lock(impl_->registry.mutex);
  return impl_->registry.drivers;
}

}  // namespace softib::kernel
