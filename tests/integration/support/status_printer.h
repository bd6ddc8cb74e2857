// GoogleTest prints ABI statuses and enums by name.
#pragma once

#include <ostream>

#include "softib/abi/types.h"

namespace softib::abi {

inline void PrintTo(Status value, std::ostream* os) { *os << ToString(value); }
inline void PrintTo(QpState value, std::ostream* os) { *os << ToString(value); }
inline void PrintTo(WcStatus value, std::ostream* os) { *os << ToString(value); }
inline void PrintTo(WcOpcode value, std::ostream* os) { *os << ToString(value); }

}  // namespace softib::abi
