// libFuzzer target for the join messages (dist/masters/join_protocol.h): the controller parses a
// node's ParamsRequest, a node parses the controller's Params answer (Start, Snapshot, Refused)
// -- authenticated on the wire, but a peer's bug must still not crash, hang or over-allocate a
// node. The first byte picks the run's node count (1..16), the second its parameter count
// (0..255); the rest is the payload. Accepted messages must be consistent with the run and
// round-trip: packing what was parsed gives back the very bytes.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "dist/masters/join_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::dist;
    if (size < 2) return 0;
    const int nodes = 1 + data[0] % 16;
    const std::size_t params = data[1];
    const std::span<const std::uint8_t> payload(data + 2, size - 2);

    if (auto incarnation = parse_join_request(payload)) {
        if (*incarnation == 0) __builtin_trap();
        const auto again = pack_join_request(*incarnation);
        if (!std::equal(again.begin(), again.end(), payload.begin(), payload.end())) __builtin_trap();
    }
    if (auto reply = parse_join_reply(payload, nodes, params)) {
        if (reply->kind != JoinReply::Kind::Refused) {
            if (reply->members.size() != static_cast<std::size_t>(nodes)) __builtin_trap();
            if (reply->kind == JoinReply::Kind::Snapshot) {
                const auto& p = reply->state.position;
                if (reply->state.params.size() != params || p.epoch < 0 || p.iteration < 0 ||
                    p.epoch_iteration > p.iteration)
                    __builtin_trap();
            }
        }
        const auto again = pack_join_reply(*reply);
        if (!std::equal(again.begin(), again.end(), payload.begin(), payload.end())) __builtin_trap();
    }
    return 0;
}
