// Update payloads; layout in update_payload.h.
#include "dist/masters/update_payload.h"

#include <string>

#include "core/error.h"
#include "dist/masters/payload_io.h"

namespace thresher::dist {

using payload_io::get;
using payload_io::put;

void put_update_header(std::vector<std::uint8_t>& out, const UpdateHeader& h) {
    put(out, h.origin);
    put(out, h.incarnation);
    put(out, h.sequence);
    put(out, h.worker);
    put(out, h.iteration);
}

UpdatePayload parse_update_payload(std::span<const std::uint8_t> in, const train::ClusterShape& cluster,
                                   std::uint32_t param_count) {
    UpdatePayload p;
    UpdateHeader& h = p.header;
    if (!get(in, h.origin) || !get(in, h.incarnation) || !get(in, h.sequence) || !get(in, h.worker) || !get(in, h.iteration))
        throw Error("shorter than its header");
    if (h.origin >= static_cast<std::uint32_t>(cluster.nodes) || static_cast<int>(h.origin) == cluster.node_rank ||
        h.sequence == 0)
        throw Error("origin node " + std::to_string(h.origin) + " or sequence number " + std::to_string(h.sequence) +
                    " out of range");
    const auto W = static_cast<std::uint32_t>(cluster.workers_per_node);
    if (W == 0 || h.worker / W != h.origin || h.iteration < 0)
        throw Error("worker " + std::to_string(h.worker) + " is not on origin node " + std::to_string(h.origin) +
                    " or iteration " + std::to_string(h.iteration) + " out of range");
    p.update = deserialize(in, param_count);
    return p;
}

}  // namespace thresher::dist
