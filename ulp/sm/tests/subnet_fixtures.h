// Subnets the SM's unit tests start from: a generated topology with LIDs assigned, and
// with min-hop routes computed.
#pragma once

#include <gtest/gtest.h>

#include "fabric/topology/generators.h"
#include "softib/sm/lids.h"
#include "softib/sm/routing.h"
#include "softib/sm/subnet.h"

namespace softib::sm::testing {

// A 2-level fat tree of `leaves` leaf switches with `hosts` hosts each and `spines` spines,
// `uplinks` cables from every leaf to every spine.
inline fabric::Topology FatTree2(unsigned leaves, unsigned hosts, unsigned spines,
                                 unsigned uplinks = 1) {
  fabric::FatTreeShape shape;
  shape.leaves = leaves;
  shape.hosts_per_leaf = hosts;
  shape.spines = spines;
  shape.uplinks = uplinks;
  return *fabric::GenerateFatTree(shape).topology;
}

inline Subnet WithLids(const fabric::Topology& topology, uint8_t lmc = 0) {
  Subnet subnet = SubnetFromTopology(topology);
  EXPECT_TRUE(AssignLids(subnet, lmc, nullptr).ok());
  return subnet;
}

// LIDs and min-hop LFTs; every LID reachable.
inline Subnet Routed(const fabric::Topology& topology, uint8_t lmc = 0) {
  Subnet subnet = WithLids(topology, lmc);
  const RoutingReport report = ComputeMinHopRoutes(subnet);
  EXPECT_TRUE(report.ok()) << report.error;
  EXPECT_EQ(report.unreachable, 0u);
  return subnet;
}

}  // namespace softib::sm::testing
