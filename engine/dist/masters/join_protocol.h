// The messages of joining a running cluster (NodeLink, node_link.h), over the controller's TCP
// bulk channel. A node asks once, at start; the controller answers when it can:
//
//   node k -> node 0   ParamsRequest  u8 kind (1), u64 incarnation of node k's UDP transport
//   node 0 -> node k   Params         u8 kind, u64 the incarnation asked for, then by kind:
//     Start     the run has not begun: start from the run's initial parameters, with the others
//               u32 nodes, u8 per node (1: in the run)
//     Snapshot  the run is going on: continue from the controller's current state
//               u32 nodes, u8 per node, u8 rejoin, i32 epoch, i64 iteration, i64 epoch_iteration,
//               u64 params, u64 updater state, then those floats
//     Refused   u8... the reason, in words
//
// Fields, floats included, are in network byte order (dist/net/wire.h, like every wire format of
// engine/dist: README.md there). Payloads come authenticated (HMAC under the run secret), but are
// still parsed field by field: a malformed one is refused, never trusted.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "train/training_master.h"

namespace thresher::dist {

struct JoinReply {
    enum class Kind : std::uint8_t { Start = 1, Snapshot = 2, Refused = 3 };
    Kind kind = Kind::Start;
    std::uint64_t incarnation = 0;  // the requester's, echoed: an answer to another request is not ours
    std::vector<bool> members;      // Start and Snapshot: which nodes are in the run
    bool rejoin = false;            // Snapshot: an earlier process of the node had been in the run
    train::JoinState state;         // Snapshot
    std::string reason;             // Refused
};

std::vector<std::uint8_t> pack_join_request(std::uint64_t incarnation);
// The incarnation asked for, or nullopt when the payload is not a join request.
std::optional<std::uint64_t> parse_join_request(std::span<const std::uint8_t> payload);

std::vector<std::uint8_t> pack_join_reply(const JoinReply&);
// nullopt when malformed, or when its node count or parameter count is not this run's.
std::optional<JoinReply> parse_join_reply(std::span<const std::uint8_t> payload, int nodes, std::size_t param_count);

}  // namespace thresher::dist
