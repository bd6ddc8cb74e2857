// Which nodes a softibd hosts (--hosts / --part) and the names nodes go by.
#include "fabric_part.h"

#include <gtest/gtest.h>

#include "fabric/topology/generators.h"

namespace softib::softibd::test {
namespace {

std::vector<std::string> Hosted(const fabric::Topology& t, const std::vector<bool>& hosted) {
  const std::vector<std::string> all = NodeNames(t);
  std::vector<std::string> names;
  for (fabric::NodeIndex i = 0; i < t.nodes().size(); ++i)
    if (hosted[i]) names.push_back(all[i]);
  std::sort(names.begin(), names.end());
  return names;
}

TEST(FabricPart, NodesByDescriptionFirstWordOrId) {
  const fabric::Topology t = fabric::DefaultTopology();
  std::string error;
  const auto host = FindNode(t, "host-0003", &error);
  ASSERT_TRUE(host) << error;
  EXPECT_EQ(FindNode(t, "host-0003 HCA-1", &error), host);
  EXPECT_EQ(FindNode(t, t.node(*host).name, &error), host);
  EXPECT_EQ(NodeNames(t)[*host], "host-0003");
  // Each node's shortest name finds it alone (the ids of nodes whose description is shared).
  const std::vector<std::string> names = NodeNames(t);
  for (fabric::NodeIndex i = 0; i < t.nodes().size(); ++i)
    EXPECT_EQ(FindNode(t, names[i], &error), i) << names[i];
  EXPECT_FALSE(FindNode(t, "host-9", &error));
  EXPECT_EQ(error, "no node is named \"host-9\"");
}

TEST(FabricPart, PartsKeepEachLeafWithItsHosts) {
  const fabric::Topology t = fabric::DefaultTopology();
  std::vector<bool> hosted;
  std::string error;
  ASSERT_TRUE(SelectHosted(t, "", "1/2", &hosted, &error)) << error;
  EXPECT_EQ(Hosted(t, hosted),
            (std::vector<std::string>{"host-0001", "host-0002", "leaf-01", "spine-01"}));
  ASSERT_TRUE(SelectHosted(t, "", "2/2", &hosted, &error)) << error;
  EXPECT_EQ(Hosted(t, hosted), (std::vector<std::string>{"host-0003", "host-0004", "leaf-02"}));
  ASSERT_TRUE(SelectHosted(t, "", "", &hosted, &error));
  EXPECT_EQ(Hosted(t, hosted).size(), 7u);
  ASSERT_TRUE(SelectHosted(t, "leaf-02,host-0004 HCA-1", "", &hosted, &error)) << error;
  EXPECT_EQ(Hosted(t, hosted), (std::vector<std::string>{"host-0004", "leaf-02"}));
}

TEST(FabricPart, RefusesBadPartsAndNames) {
  const fabric::Topology t = fabric::DefaultTopology();
  std::vector<bool> hosted;
  std::string error;
  for (const char* bad : {"0/2", "3/2", "1/0", "1", "/2", "1/", "a/b", "1/2x", "-1/2"}) {
    EXPECT_FALSE(SelectHosted(t, "", bad, &hosted, &error)) << bad;
    EXPECT_NE(error.find("--part"), std::string::npos) << error;
  }
  EXPECT_FALSE(SelectHosted(t, "leaf-01,nosuch", "", &hosted, &error));
  EXPECT_EQ(error, "--hosts: no node is named \"nosuch\"");
  EXPECT_FALSE(SelectHosted(t, "leaf-01,", "", &hosted, &error));
}

}  // namespace
}  // namespace softib::softibd::test
