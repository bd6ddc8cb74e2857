// The AL's PathRecord cache (IBAL and Linux ib_sa keep one too): answers of PathRecord
// Get/GetTable queries by (port, method, ComponentMask, the template with the unselected
// fields zeroed), dropped as a whole for a port when its LID, SM, P_Keys or state change
// (AlCa::Dispatch) or when a client asks (PathCacheControl). Any IRQL up to DISPATCH.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "runtime/al/src/sa/sa_mad.h"
#include "softib/kernel/spin_lock.h"

namespace softib::al::sa {

class PathCache {
 public:
  struct Key {
    uint64_t port_guid;  // host order
    uint8_t method;
    uint64_t component_mask;
    std::vector<uint8_t> masked;  // MaskedTemplate
    auto operator<=>(const Key&) const = default;
  };
  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint32_t invalidations = 0;
    uint32_t entries = 0;
  };
  static constexpr std::size_t kMaxEntries = 4096;

  // Whether a request is answered through the cache: PathRecord Get or GetTable.
  static bool Cacheable(const SaRequest& request);
  static Key KeyOf(uint64_t port_guid, const SaRequest& request);

  std::optional<SaAnswer> Lookup(const Key& key);  // counts a hit or a miss
  void CountBypass(uint64_t port_guid);            // a miss: asked with BYPASS_CACHE
  // Keeps a successful answer with records (a full cache forgets everything first).
  void Store(const Key& key, const SaAnswer& answer);
  void Invalidate(uint64_t port_guid);  // every answer of the port
  Stats Read(uint64_t port_guid);

 private:
  struct PortStats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint32_t invalidations = 0;
  };
  kernel::KSpinLock lock_;
  std::map<Key, SaAnswer> entries_;
  std::map<uint64_t, PortStats> stats_;
};

}  // namespace softib::al::sa
