#include "runtime/al/src/sa/path_cache.h"

namespace softib::al::sa {

bool PathCache::Cacheable(const SaRequest& request) {
  return request.attribute_id == kPathRecordAttribute &&
         (request.method == kGet || request.method == kGetTable);
}

PathCache::Key PathCache::KeyOf(uint64_t port_guid, const SaRequest& request) {
  return Key{port_guid, request.method, request.component_mask,
             MaskedTemplate(request.attribute_id, request.component_mask, request.attribute)};
}

std::optional<SaAnswer> PathCache::Lookup(const Key& key) {
  kernel::SpinLockGuard guard(lock_);
  PortStats& stats = stats_[key.port_guid];
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    ++stats.misses;
    return std::nullopt;
  }
  ++stats.hits;
  return it->second;
}

void PathCache::CountBypass(uint64_t port_guid) {
  kernel::SpinLockGuard guard(lock_);
  ++stats_[port_guid].misses;
}

void PathCache::Store(const Key& key, const SaAnswer& answer) {
  if (!answer.valid || answer.mad_status != 0 || answer.num_records == 0) return;
  kernel::SpinLockGuard guard(lock_);
  if (entries_.size() >= kMaxEntries) entries_.clear();
  entries_[key] = answer;
}

void PathCache::Invalidate(uint64_t port_guid) {
  kernel::SpinLockGuard guard(lock_);
  ++stats_[port_guid].invalidations;
  std::erase_if(entries_,
                [port_guid](const auto& entry) { return entry.first.port_guid == port_guid; });
}

PathCache::Stats PathCache::Read(uint64_t port_guid) {
  kernel::SpinLockGuard guard(lock_);
  Stats out;
  const PortStats& stats = stats_[port_guid];
  out.hits = stats.hits;
  out.misses = stats.misses;
  out.invalidations = stats.invalidations;
  for (const auto& [key, answer] : entries_) out.entries += key.port_guid == port_guid ? 1 : 0;
  return out;
}

}  // namespace softib::al::sa
