// A host's CA pulled out and put back at run time (`softib fabric remove|add HOST`): the
// node stays (its AL, its open files, its directory); only the CA goes and comes, as a
// card would. What the rest of the fabric sees follows from the cables: the switch port
// goes down (trap 128 to the SM, a sweep, traps 65/64 to the SA's subscribers).
#include <cinttypes>
#include <cstdio>

#include "fabric_nodes.h"
#include "fabric_part.h"

namespace softib::softibd {

namespace {

std::string Refused(const std::string& message) { return "error: " + message + "\n"; }

std::string StatusText(kernel::Status status) {
  return "status " + std::to_string(static_cast<uint32_t>(status));
}

std::string GuidText(uint64_t guid) {
  char text[24];
  std::snprintf(text, sizeof text, "0x%016" PRIx64, guid);
  return text;
}

}  // namespace

FabricNodes::HostNode* FabricNodes::FindHost(const std::string& name, std::string* error) {
  const auto node = FindNode(topology_, name, error);
  if (!node) return nullptr;
  for (HostNode& h : hosts_) {
    if (h.node != *node) continue;
    if (h.stack) return &h;
    *error = h.name + " is a light host: it has no CA to remove or add";
    return nullptr;
  }
  *error = name + " is not a host of this daemon";
  return nullptr;
}

std::string FabricNodes::RemoveHost(const std::string& name) {
  std::string error;
  HostNode* h = FindHost(name, &error);
  if (h == nullptr) return Refused(error);
  if (h->removed) return Refused(h->name + "'s CA is removed already");
  // The CA first, as a card that vanishes: its clients hear CA_REMOVE, not a link flap.
  const kernel::Status status = h->stack->RemoveCa(h->guid);
  if (status != kernel::Status::SUCCESS)
    return Refused(h->name + ": the CA was not removed (" + StatusText(status) + ")");
  h->removed = true;
  for (const auto& [port, index] : h->plugged) {
    host_->SetLinkState(index, nullptr);
    host_->SetInbound(index, nullptr);
    const std::string answer = OnFabricThread([this, node = h->node, port = port] {
      return commands_->SetCaPresent({node, port}, false);
    });
    if (answer.rfind("ok", 0) != 0) return answer;
  }
  return "ok\n" + h->name + ": CA " + GuidText(h->guid) + " removed\n";
}

std::string FabricNodes::AddHost(const std::string& name) {
  std::string error;
  HostNode* h = FindHost(name, &error);
  if (h == nullptr) return Refused(error);
  if (!h->removed) return Refused(h->name + "'s CA is present (`remove` it first)");
  uint64_t guid = 0;
  kernel::Status status = h->stack->AddCa(h->ca, &guid);
  if (status != kernel::Status::SUCCESS)
    return Refused(h->name + ": the CA did not arrive (" + StatusText(status) + ")");
  h->removed = false;
  for (const auto& [port, index] : std::vector(h->plugged)) {
    status = PlugPort(*h, port, index);
    if (status != kernel::Status::SUCCESS)
      return Refused(h->name + ": port " + std::to_string(port) + " not plugged (" +
                   StatusText(status) + ")");
    const std::string answer = OnFabricThread([this, node = h->node, port = port] {
      return commands_->SetCaPresent({node, port}, true);
    });
    if (answer.rfind("ok", 0) != 0) return answer;
  }
  return "ok\n" + h->name + ": CA " + GuidText(guid) + " added\n";
}

}  // namespace softib::softibd
