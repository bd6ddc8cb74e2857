// IBA 14.2.2 directed-route rules. The comments name the compliance statements: C14-9 for
// outbound SMPs (D = 0), C14-13 for returning ones (D = 1). Fields are read and written
// through the generated SmpDr view (idl/mad_common.idl), never by hand.
#include "softib/smp/directed_route.h"

#include "softib/mad/mad_common.h"

namespace softib::smp {
namespace {

// Entry `index` of InitialPath or ReturnPath (index <= 63 is guaranteed by the callers,
// which check HopCount first).
uint8_t PathEntry(std::span<const uint8_t, 64> path, unsigned index) { return path[index]; }

bool ValidEgress(NodeShape node, uint8_t port) { return port >= 1 && port <= node.num_ports; }

Drop CheckHeader(std::span<const uint8_t> smp) {
  if (smp.size() < kSmpBytes) return Drop::kTooShort;
  const mad::SmpDrConstView view(smp);
  if (view.MgmtClass() != mad::kSubnMgtDRClass) return Drop::kNotDirectedRoute;
  if (view.HopCount() > kMaxHopCount) return Drop::kBadHopCount;
  return Drop::kNone;
}

}  // namespace

const char* ToString(Drop reason) {
  switch (reason) {
    case Drop::kNone:
      return "none";
    case Drop::kTooShort:
      return "shorter than 256 bytes";
    case Drop::kNotDirectedRoute:
      return "not a directed-route SMP";
    case Drop::kBadHopCount:
      return "hop count above 63";
    case Drop::kBadHopPointer:
      return "hop pointer out of range";
    case Drop::kNotASwitch:
      return "only a switch relays a directed-route SMP";
    case Drop::kBadPort:
      return "path names a port the node does not have";
    case Drop::kWrongEgressPort:
      return "sent on a port other than the one the path names";
    case Drop::kLidSegmentAtCa:
      return "only a switch starts a LID-routed segment";
  }
  return "unknown";
}

Drop PrepareSend(std::span<uint8_t> smp, NodeShape node, uint8_t port) {
  if (const Drop bad = CheckHeader(smp); bad != Drop::kNone) return bad;
  const mad::SmpDrView view(smp);
  const unsigned hop_ptr = view.HopPointer();
  const unsigned hop_cnt = view.HopCount();

  if (view.D() == 0) {
    // C14-9:1: the originator of a path with hops.
    if (hop_cnt != 0 && hop_ptr == 0) {
      view.set_HopPointer(1);
      return PathEntry(view.InitialPath(), 1) == port ? Drop::kNone : Drop::kWrongEgressPort;
    }
    // C14-9:2: a relay in the middle of the path.
    if (hop_ptr != 0 && hop_ptr < hop_cnt) {
      if (!node.is_switch) return Drop::kNotASwitch;
      view.set_HopPointer(static_cast<uint8_t>(hop_ptr + 1));
      return PathEntry(view.InitialPath(), hop_ptr + 1) == port ? Drop::kNone
                                                                : Drop::kWrongEgressPort;
    }
    // C14-9:3: the end of the directed-route part.
    if (hop_ptr == hop_cnt) {
      view.set_HopPointer(static_cast<uint8_t>(hop_ptr + 1));
      return node.is_switch || view.DrDLID() == kPermissiveLid ? Drop::kNone
                                                               : Drop::kLidSegmentAtCa;
    }
    // C14-9:4 (on its way to the SMA through a LID-routed part); C14-9:5 otherwise.
    return hop_ptr == hop_cnt + 1 ? Drop::kNone : Drop::kBadHopPointer;
  }

  // C14-13:1: the responder at the end of the path.
  if (hop_cnt != 0 && hop_ptr == hop_cnt + 1) {
    view.set_HopPointer(static_cast<uint8_t>(hop_ptr - 1));
    return PathEntry(view.ReturnPath(), hop_ptr - 1) == port ? Drop::kNone : Drop::kWrongEgressPort;
  }
  // C14-13:2: a relay in the middle of the path.
  if (hop_ptr >= 2 && hop_ptr <= hop_cnt) {
    if (!node.is_switch) return Drop::kNotASwitch;
    view.set_HopPointer(static_cast<uint8_t>(hop_ptr - 1));
    return PathEntry(view.ReturnPath(), hop_ptr - 1) == port ? Drop::kNone : Drop::kWrongEgressPort;
  }
  // C14-13:3: the end of the directed-route part on the way back.
  if (hop_ptr == 1) {
    view.set_HopPointer(0);
    return node.is_switch || view.DrSLID() == kPermissiveLid ? Drop::kNone : Drop::kLidSegmentAtCa;
  }
  // C14-13:4 (on its way to the SM through a LID-routed part); C14-13:5 otherwise.
  return hop_ptr == 0 ? Drop::kNone : Drop::kBadHopPointer;
}

Decision OnArrival(std::span<uint8_t> smp, NodeShape node, uint8_t in_port) {
  if (const Drop bad = CheckHeader(smp); bad != Drop::kNone) return Decision::Dropped(bad);
  const mad::SmpDrView view(smp);
  const unsigned hop_ptr = view.HopPointer();
  const unsigned hop_cnt = view.HopCount();

  if (view.D() == 0) {
    // C14-9:1: the sender should have moved the hop pointer off 0.
    if (hop_cnt != 0 && hop_ptr == 0) return Decision::Dropped(Drop::kBadHopPointer);
    // C14-9:2: an intermediate hop records where the SMP came from and relays it.
    if (hop_ptr != 0 && hop_ptr < hop_cnt) {
      if (!node.is_switch) return Decision::Dropped(Drop::kNotASwitch);
      const uint8_t egress = PathEntry(view.InitialPath(), hop_ptr + 1);
      if (!ValidEgress(node, egress)) return Decision::Dropped(Drop::kBadPort);
      view.ReturnPath()[hop_ptr] = in_port;
      if (const Drop bad = PrepareSend(smp, node, egress); bad != Drop::kNone)
        return Decision::Dropped(bad);
      return Decision::Forward(egress);
    }
    // C14-9:3: the end of the directed-route part. The SMP loops back through this
    // node's send side (HopPointer becomes HopCount + 1) to the SMA, or, when DrDLID names
    // a LID, a LID-routed segment starts here.
    if (hop_ptr == hop_cnt) {
      if (hop_cnt != 0) view.ReturnPath()[hop_ptr] = in_port;
      view.set_HopPointer(static_cast<uint8_t>(hop_ptr + 1));
      if (view.DrDLID() == kPermissiveLid) return Decision::Local();
      if (!node.is_switch) return Decision::Dropped(Drop::kLidSegmentAtCa);
      return Decision::ForwardByLid(view.DrDLID());
    }
    // C14-9:4: the SMP reached its destination through a LID-routed final part.
    if (hop_ptr == hop_cnt + 1) return Decision::Local();
    return Decision::Dropped(Drop::kBadHopPointer);  // C14-9:5
  }

  // Returning.
  if (hop_cnt != 0 && hop_ptr == hop_cnt + 1) {
    // The response of a request that left the directed-route part here over a LID-routed
    // final segment comes back to this switch LID-routed; the way back starts with the
    // port the request came in on (C14-13:1 applied by the node at the end of the DR part).
    if (!node.is_switch) return Decision::Dropped(Drop::kBadHopPointer);
    const uint8_t egress = PathEntry(view.ReturnPath(), hop_cnt);
    if (!ValidEgress(node, egress)) return Decision::Dropped(Drop::kBadPort);
    if (const Drop bad = PrepareSend(smp, node, egress); bad != Drop::kNone)
      return Decision::Dropped(bad);
    return Decision::Forward(egress);
  }
  // C14-13:2: an intermediate hop relays it along ReturnPath.
  if (hop_ptr >= 2 && hop_ptr <= hop_cnt) {
    if (!node.is_switch) return Decision::Dropped(Drop::kNotASwitch);
    const uint8_t egress = PathEntry(view.ReturnPath(), hop_ptr - 1);
    if (!ValidEgress(node, egress)) return Decision::Dropped(Drop::kBadPort);
    if (const Drop bad = PrepareSend(smp, node, egress); bad != Drop::kNone)
      return Decision::Dropped(bad);
    return Decision::Forward(egress);
  }
  // C14-13:3: the start of the path. With a permissive DrSLID the SM is here; otherwise
  // this switch sends the response LID-routed to DrSLID.
  if (hop_ptr == 1) {
    if (view.DrSLID() == kPermissiveLid) {
      view.set_HopPointer(0);
      return Decision::Local();
    }
    if (!node.is_switch) return Decision::Dropped(Drop::kLidSegmentAtCa);
    view.set_HopPointer(0);
    return Decision::ForwardByLid(view.DrSLID());
  }
  // C14-13:4: back at the SM (after a LID-routed first part); C14-13:5 otherwise.
  if (hop_ptr == 0) return Decision::Local();
  return Decision::Dropped(Drop::kBadHopPointer);
}

Decision Respond(std::span<uint8_t> smp, NodeShape node, uint16_t request_slid) {
  if (const Drop bad = CheckHeader(smp); bad != Drop::kNone) return Decision::Dropped(bad);
  const mad::SmpDrView view(smp);
  view.set_D(1);
  const unsigned hop_ptr = view.HopPointer();
  const unsigned hop_cnt = view.HopCount();

  if (hop_cnt == 0) {
    // No directed-route part: the request came from this node's own SM (C14-13:3 takes
    // the hop pointer back to 0), or LID-routed from DrSLID.
    if (hop_ptr != 1) return Decision::Dropped(Drop::kBadHopPointer);
    view.set_HopPointer(0);
    if (view.DrSLID() == kPermissiveLid) return Decision::Local();
    return Decision::ForwardByLid(view.DrSLID());
  }
  if (hop_ptr != hop_cnt + 1) return Decision::Dropped(Drop::kBadHopPointer);
  if (view.DrDLID() != kPermissiveLid) {
    // The request arrived over a LID-routed final segment: answer along it; the switch
    // that started it takes the response back onto the directed route.
    return Decision::ForwardByLid(request_slid);
  }
  // C14-13:1: back out of the port the request came in on.
  const uint8_t egress = PathEntry(view.ReturnPath(), hop_cnt);
  if (!ValidEgress(node, egress)) return Decision::Dropped(Drop::kBadPort);
  if (const Drop bad = PrepareSend(smp, node, egress); bad != Drop::kNone)
    return Decision::Dropped(bad);
  return Decision::Forward(egress);
}

}  // namespace softib::smp
