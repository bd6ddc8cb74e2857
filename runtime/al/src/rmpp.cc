// RMPP state machines (rmpp.h).
#include "runtime/al/src/rmpp.h"
