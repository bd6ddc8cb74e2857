// The I/O unit model behind the device management agent: the attribute bytes of
// IOUnitInfo, IOControllerProfile and ServiceEntries and the DevMgt statuses, written from
// the IBA tables (16.3.3.3 - 16.3.3.5; statuses 13.4.7 and 16.3.1.2), not from the IDL.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <vector>

#include "runtime/al/src/ioc/io_unit.h"

namespace softib::al::ioc {
namespace {

constexpr uint16_t kIoUnitInfo = 0x0010, kIocProfile = 0x0011, kServiceEntries = 0x0012;

std::vector<uint8_t> Get(const IoUnit& unit, uint16_t attribute, uint32_t modifier,
                         uint16_t* status) {
  std::vector<uint8_t> data(192, 0);
  *status = unit.Get(attribute, modifier, data);
  return data;
}

IoUnit::Profile ProfileWithGuid(uint64_t guid) {
  IoUnit::Profile p{};
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(guid >> (56 - 8 * i));
  p[28] = 0x01;  // IOClass 0x0100 (bytes 28-29)
  p[64] = 'x';   // IDString from byte 64
  return p;
}

IoUnit::Name NameOf(const char* text) {
  IoUnit::Name name{};
  std::memcpy(name.data(), text, std::strlen(text));
  return name;
}

TEST(IoUnit, AnEmptyUnitListsSixteenEmptySlotsAndNoOthers) {
  IoUnit unit;
  uint16_t status = 1;
  const auto d = Get(unit, kIoUnitInfo, 0, &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(d[0], 0);  // ChangeID
  EXPECT_EQ(d[1], 0);
  EXPECT_EQ(d[2], 16);                                        // MaxControllers
  EXPECT_EQ(d[3], 0);                                         // DiagDeviceID, OptionROM
  for (int i = 4; i < 12; ++i) EXPECT_EQ(d[i], 0x00) << i;    // slots 1..16: not installed
  for (int i = 12; i < 132; ++i) EXPECT_EQ(d[i], 0xFF) << i;  // slots 17..256: none
  EXPECT_FALSE(unit.AnyRegistered());
}

TEST(IoUnit, ARegisteredControllerIsReportedWithItsServices) {
  IoUnit unit;
  int ioc = 0, other = 0, s1 = 0, s2 = 0;
  unit.AddController(&ioc, ProfileWithGuid(0x0002C90300001234ull));
  unit.AddController(&other, ProfileWithGuid(0x0002C90300005678ull));
  // Not visible before it is registered: no ChangeID move.
  ASSERT_TRUE(unit.AddService(&ioc, &s1, 0x0000494F00000001ull, NameOf("SRP.T10:1234")));
  EXPECT_EQ(unit.change_id(), 0);
  EXPECT_EQ(unit.Register(&other), 1);
  EXPECT_EQ(unit.Register(&ioc), 2);
  EXPECT_EQ(unit.Register(&ioc), -1);
  EXPECT_EQ(unit.change_id(), 2);
  ASSERT_TRUE(unit.AddService(&ioc, &s2, 0x0000494F00000002ull, NameOf("second")));
  EXPECT_EQ(unit.change_id(), 3);

  uint16_t status = 1;
  auto d = Get(unit, kIoUnitInfo, 0, &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(d[0] << 8 | d[1], 3);
  EXPECT_EQ(d[4], 0x11);  // slot 1 (high nibble) and slot 2 present
  EXPECT_EQ(d[5], 0x00);

  d = Get(unit, kIocProfile, 2, &status);
  EXPECT_EQ(status, 0);
  const std::vector<uint8_t> guid = {0x00, 0x02, 0xC9, 0x03, 0x00, 0x00, 0x12, 0x34};
  EXPECT_EQ(std::vector<uint8_t>(d.begin(), d.begin() + 8), guid);
  EXPECT_EQ(d[28], 0x01);  // IOClass as given
  EXPECT_EQ(d[54], 2);     // ServiceEntries: counted by the unit
  EXPECT_EQ(d[64], 'x');
  for (int i = 128; i < 192; ++i) EXPECT_EQ(d[i], 0) << i;

  // Entries 0..1 of slot 2: 48 bytes each, the name (40) then the ID (8).
  d = Get(unit, kServiceEntries, 2u << 16 | 1u << 8 | 0u, &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.data())), "SRP.T10:1234");
  const std::vector<uint8_t> id1 = {0x00, 0x00, 0x49, 0x4F, 0x00, 0x00, 0x00, 0x01};
  EXPECT_EQ(std::vector<uint8_t>(d.begin() + 40, d.begin() + 48), id1);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.data() + 48)), "second");
  EXPECT_EQ(d[48 + 47], 0x02);
  for (int i = 96; i < 192; ++i) EXPECT_EQ(d[i], 0) << i;
  // Entry 1 alone lands first.
  d = Get(unit, kServiceEntries, 2u << 16 | 1u << 8 | 1u, &status);
  EXPECT_EQ(status, 0);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(d.data())), "second");

  // Removing a service, then the controller: the ChangeID moves, the slot empties.
  unit.RemoveService(&ioc, &s1);
  EXPECT_EQ(unit.change_id(), 4);
  d = Get(unit, kIocProfile, 2, &status);
  EXPECT_EQ(d[54], 1);
  unit.RemoveController(&ioc);
  EXPECT_EQ(unit.change_id(), 5);
  d = Get(unit, kIoUnitInfo, 0, &status);
  EXPECT_EQ(d[4], 0x10);
  EXPECT_TRUE(unit.AnyRegistered());
  unit.RemoveController(&other);
  EXPECT_FALSE(unit.AnyRegistered());
}

TEST(IoUnit, BadModifiersAndEmptySlotsGetTheirDevMgtStatus) {
  IoUnit unit;
  int ioc = 0, s = 0;
  unit.AddController(&ioc, ProfileWithGuid(1));
  ASSERT_EQ(unit.Register(&ioc), 1);
  ASSERT_TRUE(unit.AddService(&ioc, &s, 7, NameOf("one")));
  uint16_t status = 0;
  Get(unit, kIocProfile, 0, &status);
  EXPECT_EQ(status, 0x001C);  // slot 0: invalid field
  Get(unit, kIocProfile, 17, &status);
  EXPECT_EQ(status, 0x001C);
  Get(unit, kIocProfile, 2, &status);
  EXPECT_EQ(status, 0x0100);  // no IOC in the slot
  Get(unit, kServiceEntries, 1u << 16 | 0u << 8 | 1u, &status);
  EXPECT_EQ(status, 0x001C);  // last before first
  Get(unit, kServiceEntries, 1u << 16 | 4u << 8 | 0u, &status);
  EXPECT_EQ(status, 0x001C);  // five entries in one Get
  Get(unit, kServiceEntries, 1u << 16 | 1u << 8 | 0u, &status);
  EXPECT_EQ(status, 0x0200);  // entry 1 does not exist
  Get(unit, kServiceEntries, 3u << 16, &status);
  EXPECT_EQ(status, 0x0100);
  Get(unit, kIoUnitInfo, 1, &status);
  EXPECT_EQ(status, 0x001C);
  Get(unit, 0x0099, 0, &status);
  EXPECT_EQ(status, 0x000C);  // unsupported attribute
}

TEST(IoUnit, SixteenSlotsThenFullAndServiceEntriesStopAt255) {
  IoUnit unit;
  std::array<int, 17> iocs{};
  for (int i = 0; i < 17; ++i) unit.AddController(&iocs[i], ProfileWithGuid(i + 1));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(unit.Register(&iocs[i]), i + 1);
  EXPECT_EQ(unit.Register(&iocs[16]), 0);
  unit.RemoveController(&iocs[3]);
  EXPECT_EQ(unit.Register(&iocs[16]), 4);  // the freed slot
  std::vector<int> services(256);
  for (int i = 0; i < 255; ++i) EXPECT_TRUE(unit.AddService(&iocs[0], &services[i], i, {}));
  EXPECT_FALSE(unit.AddService(&iocs[0], &services[255], 255, {}));
  uint16_t status = 1;
  const auto d = Get(unit, kIocProfile, 1, &status);
  EXPECT_EQ(d[54], 255);
}

}  // namespace
}  // namespace softib::al::ioc
