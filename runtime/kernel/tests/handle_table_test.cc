// Object manager and handle tables: type, generation and table checks; busy destroy;
// CloseAll order; references outliving handles.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "softib/kernel/handle_table.h"
#include "softib/kernel/node.h"
#include "softib/kernel/object.h"

namespace softib::kernel {
namespace {

using abi::ObjectType;

// What the tests observe: destroy order and live objects.
struct World {
  std::mutex mutex;
  std::vector<std::string> destroyed;
  std::atomic<int> live{0};
};

class TestObject : public KernelObject {
 public:
  TestObject(World& world, ObjectType type, std::string name, KernelObject* uses = nullptr)
      : KernelObject(type), world_(world), name_(std::move(name)), uses_(uses) {
    world_.live.fetch_add(1);
    if (uses_ != nullptr && !uses_->TryAddChild()) uses_ = nullptr;
    if (uses_ != nullptr) ReferenceObject(uses_);  // as a QP holds its CQ
  }
  ~TestObject() override {
    if (uses_ != nullptr) DereferenceObject(uses_);
    world_.live.fetch_sub(1);
  }

 protected:
  void OnDestroy() override {
    if (uses_ != nullptr) uses_->RemoveChild();  // a QP releases its CQ
    std::lock_guard lock(world_.mutex);
    world_.destroyed.push_back(name_);
  }

 private:
  World& world_;
  std::string name_;
  KernelObject* uses_;
};

class HandleTableTest : public ::testing::Test {
 protected:
  // Creates an object under `parent` and publishes it; returns its handle.
  uint64_t Create(ObjectHandleTable& table, ObjectType type, const std::string& name,
                  uint64_t parent_handle = 0, ObjectType parent_type = ObjectType::kNone,
                  KernelObject* uses = nullptr) {
    auto* object = new TestObject(world_, type, name, uses);
    if (parent_handle != 0) {
      ObjectRef parent;
      EXPECT_EQ(table.Lookup(parent_handle, parent_type, HandleAccess::kWrite, &parent),
                Status::SUCCESS);
      EXPECT_EQ(object->SetParent(parent.get()), Status::SUCCESS);
    }
    uint64_t handle = 0;
    EXPECT_EQ(table.Insert(object, &handle), Status::SUCCESS);
    DereferenceObject(object);  // the table keeps its own
    return handle;
  }

  KernelObject* Peek(ObjectHandleTable& table, uint64_t handle, ObjectType type) {
    ObjectRef ref;
    if (table.Lookup(handle, type, HandleAccess::kRead, &ref) != Status::SUCCESS) return nullptr;
    return ref.get();
  }

  World world_;
  Node node_;
};

TEST_F(HandleTableTest, HandlesCarryTypeTagGenerationAndIndex) {
  ObjectHandleTable table(&node_);
  const uint64_t ca = Create(table, ObjectType::Ca, "ca");
  EXPECT_NE(ca, 0u);
  EXPECT_EQ(ca >> 56, static_cast<uint64_t>(ObjectType::Ca));
  EXPECT_EQ((ca >> 40) & 0xffff, table.tag());
  EXPECT_EQ((ca >> 20) & 0xfffff, 1u);  // first generation
  EXPECT_EQ(ca & 0xfffff, 0u);          // first slot
  ObjectRef ref;
  EXPECT_EQ(table.Lookup(ca, ObjectType::Ca, HandleAccess::kRead, &ref), Status::SUCCESS);
  EXPECT_EQ(ref.get()->type(), ObjectType::Ca);
  EXPECT_EQ(table.size(), 1u);
}

TEST_F(HandleTableTest, WrongTypeZeroAndGarbageHandlesDoNotResolve) {
  ObjectHandleTable table(&node_);
  const uint64_t pd = Create(table, ObjectType::Pd, "pd");
  ObjectRef ref;
  EXPECT_EQ(table.Lookup(pd, ObjectType::Qp, HandleAccess::kRead, &ref), Status::INVALID_HANDLE);
  // The type byte rewritten to match the request: the entry's type still decides.
  const uint64_t relabelled =
      (pd & ~(uint64_t{0xff} << 56)) | (uint64_t{static_cast<uint8_t>(ObjectType::Qp)} << 56);
  EXPECT_EQ(table.Lookup(relabelled, ObjectType::Qp, HandleAccess::kRead, &ref),
            Status::INVALID_HANDLE);
  EXPECT_EQ(table.Lookup(0, ObjectType::Pd, HandleAccess::kRead, &ref), Status::INVALID_HANDLE);
  std::mt19937_64 random(42);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t garbage = random();
    if (garbage == pd) continue;
    EXPECT_EQ(table.Lookup(garbage, ObjectType::Pd, HandleAccess::kRead, &ref),
              Status::INVALID_HANDLE);
  }
  EXPECT_FALSE(ref);
}

TEST_F(HandleTableTest, StaleAndDestroyedHandlesDoNotResolve) {
  ObjectHandleTable table(&node_);
  const uint64_t first = Create(table, ObjectType::Cq, "first");
  EXPECT_EQ(table.Destroy(first, ObjectType::Cq), Status::SUCCESS);
  EXPECT_EQ(Peek(table, first, ObjectType::Cq), nullptr);                   // destroyed
  EXPECT_EQ(table.Destroy(first, ObjectType::Cq), Status::INVALID_HANDLE);  // twice
  const uint64_t second = Create(table, ObjectType::Cq, "second");
  EXPECT_EQ(second & 0xfffff, first & 0xfffff);            // the slot is reused...
  EXPECT_NE(second, first);                                // ...under a new generation
  EXPECT_EQ(Peek(table, first, ObjectType::Cq), nullptr);  // stale
  EXPECT_NE(Peek(table, second, ObjectType::Cq), nullptr);
}

TEST_F(HandleTableTest, AnotherFilesHandlesDoNotResolve) {
  ObjectHandleTable mine(&node_);
  ObjectHandleTable theirs(&node_);
  EXPECT_NE(mine.tag(), theirs.tag());
  const uint64_t my_pd = Create(mine, ObjectType::Pd, "mine");
  const uint64_t their_pd = Create(theirs, ObjectType::Pd, "theirs");
  // Same slot, same generation, same type: only the tag differs.
  EXPECT_EQ(my_pd & 0xffffffffffu, their_pd & 0xffffffffffu);
  EXPECT_EQ(Peek(mine, their_pd, ObjectType::Pd), nullptr);
  EXPECT_EQ(Peek(theirs, my_pd, ObjectType::Pd), nullptr);
}

TEST_F(HandleTableTest, DestroyWithChildrenIsBusyNeverCascades) {
  ObjectHandleTable table(&node_);
  const uint64_t ca = Create(table, ObjectType::Ca, "ca");
  const uint64_t pd = Create(table, ObjectType::Pd, "pd", ca, ObjectType::Ca);
  const uint64_t cq = Create(table, ObjectType::Cq, "cq", ca, ObjectType::Ca);
  const uint64_t qp =
      Create(table, ObjectType::Qp, "qp", pd, ObjectType::Pd, Peek(table, cq, ObjectType::Cq));
  EXPECT_EQ(table.Destroy(pd, ObjectType::Pd), Status::RESOURCE_BUSY);
  EXPECT_EQ(table.Destroy(cq, ObjectType::Cq), Status::RESOURCE_BUSY);  // the QP uses it
  EXPECT_EQ(table.Destroy(ca, ObjectType::Ca), Status::RESOURCE_BUSY);
  EXPECT_NE(Peek(table, pd, ObjectType::Pd), nullptr);  // still valid after busy
  EXPECT_TRUE(world_.destroyed.empty());
  EXPECT_EQ(table.Destroy(qp, ObjectType::Qp), Status::SUCCESS);
  EXPECT_EQ(table.Destroy(cq, ObjectType::Cq), Status::SUCCESS);
  EXPECT_EQ(table.Destroy(pd, ObjectType::Pd), Status::SUCCESS);
  EXPECT_EQ(table.Destroy(ca, ObjectType::Ca), Status::SUCCESS);
  EXPECT_EQ(world_.destroyed, (std::vector<std::string>{"qp", "cq", "pd", "ca"}));
  EXPECT_EQ(world_.live.load(), 0);
}

TEST_F(HandleTableTest, AReferenceOutlivesTheHandle) {
  ObjectHandleTable table(&node_);
  const uint64_t mr = Create(table, ObjectType::Mr, "mr");
  ObjectRef in_flight;
  ASSERT_EQ(table.Lookup(mr, ObjectType::Mr, HandleAccess::kWrite, &in_flight), Status::SUCCESS);
  EXPECT_EQ(table.Destroy(mr, ObjectType::Mr), Status::SUCCESS);
  EXPECT_EQ(world_.live.load(), 1);  // a verb still using it
  EXPECT_TRUE(in_flight.get()->destroyed());
  in_flight.Reset();
  EXPECT_EQ(world_.live.load(), 0);
}

TEST_F(HandleTableTest, ACreateUnderADestroyedParentFails) {
  ObjectHandleTable table(&node_);
  const uint64_t pd = Create(table, ObjectType::Pd, "pd");
  ObjectRef parent;
  ASSERT_EQ(table.Lookup(pd, ObjectType::Pd, HandleAccess::kWrite, &parent), Status::SUCCESS);
  ASSERT_EQ(table.Destroy(pd, ObjectType::Pd), Status::SUCCESS);
  auto* late = new TestObject(world_, ObjectType::Qp, "late");
  EXPECT_EQ(late->SetParent(parent.get()), Status::INVALID_STATE);
  DereferenceObject(late);
  parent.Reset();
  EXPECT_EQ(world_.live.load(), 0);
}

TEST_F(HandleTableTest, ReparentMovesTheChildAndTheBusyRuleWithIt) {
  ObjectHandleTable table(&node_);
  const uint64_t pd1 = Create(table, ObjectType::Pd, "pd1");
  const uint64_t pd2 = Create(table, ObjectType::Pd, "pd2");
  const uint64_t mr = Create(table, ObjectType::Mr, "mr", pd1, ObjectType::Pd);
  KernelObject* region = Peek(table, mr, ObjectType::Mr);
  KernelObject* second = Peek(table, pd2, ObjectType::Pd);
  ASSERT_EQ(region->Reparent(second), Status::SUCCESS);
  EXPECT_EQ(region->parent(), second);
  EXPECT_EQ(Peek(table, pd1, ObjectType::Pd)->child_count(), 0u);
  EXPECT_EQ(second->child_count(), 1u);
  EXPECT_EQ(table.Destroy(pd2, ObjectType::Pd), Status::RESOURCE_BUSY);
  EXPECT_EQ(table.Destroy(pd1, ObjectType::Pd), Status::SUCCESS);
  EXPECT_EQ(region->Reparent(second), Status::SUCCESS);  // to where it is: nothing changes
  EXPECT_EQ(second->child_count(), 1u);
  EXPECT_EQ(table.Destroy(mr, ObjectType::Mr), Status::SUCCESS);
  EXPECT_EQ(table.Destroy(pd2, ObjectType::Pd), Status::SUCCESS);
  EXPECT_EQ(world_.live.load(), 0);
}

TEST_F(HandleTableTest, ReparentRefusesDestroyedEnds) {
  ObjectHandleTable table(&node_);
  const uint64_t pd1 = Create(table, ObjectType::Pd, "pd1");
  const uint64_t pd2 = Create(table, ObjectType::Pd, "pd2");
  const uint64_t mr = Create(table, ObjectType::Mr, "mr", pd1, ObjectType::Pd);
  ObjectRef target, region;
  ASSERT_EQ(table.Lookup(pd2, ObjectType::Pd, HandleAccess::kWrite, &target), Status::SUCCESS);
  ASSERT_EQ(table.Lookup(mr, ObjectType::Mr, HandleAccess::kWrite, &region), Status::SUCCESS);
  ASSERT_EQ(table.Destroy(pd2, ObjectType::Pd), Status::SUCCESS);
  EXPECT_EQ(region.get()->Reparent(target.get()), Status::INVALID_STATE);
  EXPECT_EQ(region.get()->parent(), Peek(table, pd1, ObjectType::Pd));  // unchanged
  ASSERT_EQ(table.Destroy(mr, ObjectType::Mr), Status::SUCCESS);
  EXPECT_EQ(region.get()->Reparent(Peek(table, pd1, ObjectType::Pd)), Status::INVALID_STATE);
  region.Reset();
  target.Reset();
  EXPECT_EQ(table.Destroy(pd1, ObjectType::Pd), Status::SUCCESS);
  EXPECT_EQ(world_.live.load(), 0);
}

// Moves back and forth race destroys of the region: each destroy is either busy (a move
// is under way) or final, and the child counts always add up.
TEST_F(HandleTableTest, ConcurrentReparentsAndDestroyKeepCountsExact) {
  for (int round = 0; round < 50; ++round) {
    ObjectHandleTable table(&node_);
    const uint64_t pd1 = Create(table, ObjectType::Pd, "pd1");
    const uint64_t pd2 = Create(table, ObjectType::Pd, "pd2");
    const uint64_t mr = Create(table, ObjectType::Mr, "mr", pd1, ObjectType::Pd);
    ObjectRef region, a, b;
    ASSERT_EQ(table.Lookup(mr, ObjectType::Mr, HandleAccess::kWrite, &region), Status::SUCCESS);
    ASSERT_EQ(table.Lookup(pd1, ObjectType::Pd, HandleAccess::kWrite, &a), Status::SUCCESS);
    ASSERT_EQ(table.Lookup(pd2, ObjectType::Pd, HandleAccess::kWrite, &b), Status::SUCCESS);
    std::atomic<bool> stop{false};
    std::thread mover([&] {
      for (int i = 0; !stop.load(); ++i) {
        const Status s = region.get()->Reparent(i % 2 ? a.get() : b.get());
        if (s == Status::INVALID_STATE) return;  // destroyed: done
        EXPECT_TRUE(s == Status::SUCCESS || s == Status::RESOURCE_BUSY);
      }
    });
    Status destroyed = Status::RESOURCE_BUSY;
    while (destroyed == Status::RESOURCE_BUSY) destroyed = table.Destroy(mr, ObjectType::Mr);
    EXPECT_EQ(destroyed, Status::SUCCESS);
    stop = true;
    mover.join();
    EXPECT_EQ(a.get()->child_count() + b.get()->child_count(), 0u);
    region.Reset();
    a.Reset();
    b.Reset();
    EXPECT_EQ(table.Destroy(pd1, ObjectType::Pd), Status::SUCCESS);
    EXPECT_EQ(table.Destroy(pd2, ObjectType::Pd), Status::SUCCESS);
  }
  EXPECT_EQ(world_.live.load(), 0);
}

TEST_F(HandleTableTest, CloseAllDestroysChildrenBeforeParents) {
  ObjectHandleTable table(&node_);
  // Insertion order deliberately not the dependency order: the CQ is published after the
  // QP that uses it, so newest-first alone would be wrong.
  const uint64_t ca = Create(table, ObjectType::Ca, "ca");
  const uint64_t pd = Create(table, ObjectType::Pd, "pd", ca, ObjectType::Ca);
  auto* cq = new TestObject(world_, ObjectType::Cq, "cq");
  ObjectRef ca_ref;
  ASSERT_EQ(table.Lookup(ca, ObjectType::Ca, HandleAccess::kWrite, &ca_ref), Status::SUCCESS);
  ASSERT_EQ(cq->SetParent(ca_ref.get()), Status::SUCCESS);
  const uint64_t qp = Create(table, ObjectType::Qp, "qp", pd, ObjectType::Pd, cq);
  Create(table, ObjectType::Mr, "mr", pd, ObjectType::Pd);
  Create(table, ObjectType::Mcast, "mcast", qp, ObjectType::Qp);
  uint64_t cq_handle = 0;
  ASSERT_EQ(table.Insert(cq, &cq_handle), Status::SUCCESS);
  DereferenceObject(cq);
  ca_ref.Reset();

  EXPECT_EQ(table.CloseAll(), 0u);  // nothing had to be forced
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(world_.live.load(), 0);
  const auto position = [this](const std::string& name) {
    return std::find(world_.destroyed.begin(), world_.destroyed.end(), name) -
           world_.destroyed.begin();
  };
  ASSERT_EQ(world_.destroyed.size(), 6u);
  EXPECT_LT(position("mcast"), position("qp"));
  EXPECT_LT(position("qp"), position("cq"));
  EXPECT_LT(position("qp"), position("pd"));
  EXPECT_LT(position("mr"), position("pd"));
  EXPECT_LT(position("pd"), position("ca"));
  EXPECT_LT(position("cq"), position("ca"));
}

TEST_F(HandleTableTest, CloseAllForcesObjectsHeldByAnotherTable) {
  ObjectHandleTable table(&node_);
  ObjectHandleTable other(&node_);
  const uint64_t cq = Create(table, ObjectType::Cq, "cq");
  Create(other, ObjectType::Qp, "foreign user", 0, ObjectType::kNone,
         Peek(table, cq, ObjectType::Cq));
  EXPECT_EQ(table.CloseAll(), 1u);
  EXPECT_EQ(table.size(), 0u);
  other.CloseAll();
  EXPECT_EQ(world_.live.load(), 0);
}

TEST_F(HandleTableTest, ConcurrentLookupsAndDestroys) {
  ObjectHandleTable table(&node_);
  constexpr int kObjects = 200;
  std::vector<uint64_t> handles;
  for (int i = 0; i < kObjects; ++i) handles.push_back(Create(table, ObjectType::Qp, "qp"));
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done) {
      for (uint64_t handle : handles) {
        ObjectRef ref;
        if (table.Lookup(handle, ObjectType::Qp, HandleAccess::kRead, &ref) == Status::SUCCESS) {
          EXPECT_EQ(ref.get()->type(), ObjectType::Qp);
        }
      }
    }
  });
  int destroyed = 0;
  for (uint64_t handle : handles)
    destroyed += table.Destroy(handle, ObjectType::Qp) == Status::SUCCESS;
  done = true;
  reader.join();
  EXPECT_EQ(destroyed, kObjects);
  EXPECT_EQ(world_.live.load(), 0);
}

}  // namespace
}  // namespace softib::kernel
