// Built only while the tree has no IPoIB translation (ulp/ipoib/translate, target
// softib_ipoib_translate): the one translate.h name softibd's `show` uses. Goes away with it.
#include "softib/ipoib/translate.h"

namespace softib::ipoib {

const char* DropName(Drop drop) {
  switch (drop) {
    case Drop::kNone:
      return "none";
    case Drop::kRunt:
      return "runt";
    case Drop::kOversize:
      return "oversize";
    case Drop::kUnknownEthertype:
      return "unknown_ethertype";
    case Drop::kBadArp:
      return "bad_arp";
    case Drop::kBadNd:
      return "bad_nd";
    case Drop::kNoNeighbour:
      return "no_neighbour";
    case Drop::kBadEncap:
      return "bad_encap";
    case Drop::kLoopedBack:
      return "looped_back";
    case Drop::kCount:
      break;
  }
  return "?";
}

}  // namespace softib::ipoib
