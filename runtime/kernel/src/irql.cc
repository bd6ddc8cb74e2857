// Per-thread IRQL and current node: the only thread-wide state of the kernel.
#include "softib/kernel/irql.h"

#include "node_impl.h"
#include "softib/kernel/verifier.h"

namespace softib::kernel {
namespace {

thread_local Irql t_irql = Irql::kPassive;
thread_local Node* t_node = nullptr;

}  // namespace

const char* IrqlName(Irql irql) {
  switch (irql) {
    case Irql::kPassive:
      return "PASSIVE_LEVEL";
    case Irql::kApc:
      return "APC_LEVEL";
    case Irql::kDispatch:
      return "DISPATCH_LEVEL";
  }
  return "INVALID_IRQL";
}

Irql CurrentIrql() { return t_irql; }

Irql RaiseIrql(Irql level) {
  const Irql previous = t_irql;
  if (level < previous) {
    VerifierFail("IRQL violation: RaiseIrql to %s from the higher %s", IrqlName(level),
                 IrqlName(previous));
  }
  t_irql = level;
  return previous;
}

void LowerIrql(Irql previous) {
  if (previous > t_irql) {
    VerifierFail("IRQL violation: LowerIrql to %s from the lower %s", IrqlName(previous),
                 IrqlName(t_irql));
  }
  t_irql = previous;
}

void VerifyIrqlAtMost(Irql highest, const char* what) {
  if (t_irql > highest) {
    VerifierFail("IRQL violation: %s called at %s (highest allowed: %s)", what, IrqlName(t_irql),
                 IrqlName(highest));
  }
}

void VerifyBlockingAllowed(const char* what) { VerifyIrqlAtMost(Irql::kApc, what); }

void SetCurrentNode(Node* node) { t_node = node; }
void SetThreadIrql(Irql irql) { t_irql = irql; }

Node* Node::Current() { return t_node; }

NodeScope::NodeScope(Node* node) : previous_(t_node) { t_node = node; }
NodeScope::~NodeScope() { t_node = previous_; }

}  // namespace softib::kernel
