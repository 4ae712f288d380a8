// Fixed-size fields in and out of NodeLink's and the join protocol's payloads: the network byte
// order of every wire format of engine/dist (dist/net/wire.h; formats in engine/dist/README.md).
// `get` consumes from a span and says false instead of reading past its end, so a short or
// hostile payload is refused where it is parsed, never read out of bounds.
#pragma once

#include "dist/net/wire.h"

namespace thresher::dist::payload_io {

using wire::get;
using wire::put;

}  // namespace thresher::dist::payload_io
