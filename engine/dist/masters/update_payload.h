// The payload of a gradient-sharing message (MessageType::Update; engine/dist/README.md, section 3):
//   u32 origin rank, u64 origin's incarnation, u64 origin's sequence number (1, 2, ...),
//   u32 worker (global number, on the origin node), i64 the worker's iteration,
// in network byte order, then the encoded update (engine/codec/encoded_update.h, little-endian inside).
// NodeLink writes the header in its outbox and reads the whole payload in handle_update
// (node_link_relay.cpp); pure here, so it is unit-tested (test_update_payload) and fuzzed with the
// encoded update's decoder (fuzz_update_payload). A node holds the run secret, so its updates are
// authentic, but a buggy one must still be refused field by field, never trusted.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "codec/encoded_update.h"
#include "train/training_master.h"

namespace thresher::dist {

inline constexpr std::size_t kUpdateHeaderBytes = 32;

struct UpdateHeader {
    std::uint32_t origin = 0;
    std::uint64_t incarnation = 0;  // the origin's process
    std::uint64_t sequence = 0;     // the origin's numbering of its messages, from 1
    std::uint32_t worker = 0;       // global worker number: origin × workers per node + local
    std::int64_t iteration = 0;     // the worker's, for the staleness bound
};

struct UpdatePayload {
    UpdateHeader header;
    EncodedUpdate update;
};

void put_update_header(std::vector<std::uint8_t>& out, const UpdateHeader&);

// Reads a payload that arrived at node cluster.node_rank: the origin is another node of the
// cluster, the sequence number positive, the worker one of the origin's, the iteration not
// negative, and the encoded update one for `param_count` parameters (deserialize()). Throws
// thresher::Error naming what is wrong; allocates nothing the payload's size does not bound.
UpdatePayload parse_update_payload(std::span<const std::uint8_t> payload, const train::ClusterShape& cluster,
                                   std::uint32_t param_count);

}  // namespace thresher::dist
