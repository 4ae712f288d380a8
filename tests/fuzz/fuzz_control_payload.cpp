// libFuzzer target for NodeLink's Control payloads (dist/masters/node_link_control.h): done,
// joined, stop, left, round ack, result ask, gone, first, result ack. Any bytes either parse as one of those kinds
// with its fields, or are refused -- never a read past the payload, and never a reason longer
// than kMaxReason kept. What was accepted must pack into a payload that parses the same, and
// needs no more bytes than the input had (a "done" without its epoch excepted: 4 bytes more).
#include <cstdint>
#include <span>

#include "dist/masters/node_link_control.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::dist::node_link_control;
    const auto c = parse_control(std::span<const std::uint8_t>(data, size));
    if (!c) return 0;
    if (c->kind < kDone || c->kind > kFinished || c->reason.size() > kMaxReason || size == 0 || c->kind != data[0])
        __builtin_trap();
    if ((c->kind == kDone || c->kind == kFirst) && c->first == 0) __builtin_trap();  // numbers start at 1
    const auto packed = pack_control(*c);
    if (packed.size() > size + (c->kind == kDone ? 4 : 0)) __builtin_trap();
    const auto again = parse_control(packed);
    if (!again || !(*again == *c)) __builtin_trap();
    return 0;
}
