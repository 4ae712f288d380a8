// libFuzzer target for a gradient-sharing message as NodeLink receives it
// (dist/masters/update_payload.h): the header (origin, incarnation, sequence, worker, iteration)
// checked against the run, then the encoded update (codec/encoded_update.h) decoded for the
// receiver's parameter count. Any bytes either give a message from another node of the run, for
// one of its workers, that re-packs to exactly the same bytes and applies within the receiver's
// parameters, or throw thresher::Error -- never a crash, a read out of bounds or another exception.
// The first byte picks the cluster (1..16 nodes, 1..4 workers per node), the second the receiving
// node; the rest is the payload. The receiver's parameter count is the update's own length field
// when small (as in fuzz_encoded_update), so most inputs reach the update's body.
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "core/error.h"
#include "dist/masters/update_payload.h"

namespace {

std::uint32_t receiver_length(std::span<const std::uint8_t> payload) {
    const std::size_t at = thresher::dist::kUpdateHeaderBytes + 4;
    if (payload.size() < at + 4) return 1000;
    const std::uint32_t claimed = std::uint32_t(payload[at]) | std::uint32_t(payload[at + 1]) << 8 |
                                  std::uint32_t(payload[at + 2]) << 16 | std::uint32_t(payload[at + 3]) << 24;
    return claimed <= (1u << 16) ? claimed : 1000;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::dist;
    if (size < 2) return 0;
    thresher::train::ClusterShape cluster;
    cluster.nodes = 1 + (data[0] & 15);
    cluster.workers_per_node = 1 + (data[0] >> 4) % 4;
    cluster.node_rank = data[1] % cluster.nodes;
    const std::span<const std::uint8_t> payload(data + 2, size - 2);
    const std::uint32_t n = receiver_length(payload);
    try {
        const UpdatePayload p = parse_update_payload(payload, cluster, n);
        const UpdateHeader& h = p.header;
        if (h.origin >= static_cast<std::uint32_t>(cluster.nodes) || static_cast<int>(h.origin) == cluster.node_rank ||
            h.sequence == 0 || h.iteration < 0 || h.worker / static_cast<std::uint32_t>(cluster.workers_per_node) != h.origin)
            __builtin_trap();
        if (p.update.length != n || p.update.count > n) __builtin_trap();
        // Canonical: the header and the update, packed again, are the very bytes received.
        std::vector<std::uint8_t> again;
        put_update_header(again, h);
        const auto body = serialize(p.update);
        again.insert(again.end(), body.begin(), body.end());
        if (!std::equal(again.begin(), again.end(), payload.begin(), payload.end())) __builtin_trap();
        std::vector<float> params(n, 0.f);
        apply(p.update, params.data(), 1.f);
    } catch (const thresher::Error&) {
    }
    return 0;
}
