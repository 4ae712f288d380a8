// NodeLink: gradient-sharing messages -- numbering and sending our own, checking, deduplicating,
// delivering and relaying others' along the topology (node_link.h "Routing").
#include "dist/masters/node_link.h"

#include <cstdio>

#include "core/error.h"
#include "dist/masters/node_link_control.h"
#include "dist/masters/payload_io.h"
#include "dist/masters/update_payload.h"

namespace thresher::dist {

using payload_io::get;
using payload_io::put;
using namespace node_link_control;

void NodeLink::handle_update(const Message& m) {
    // Authenticated, but still checked field by field (update_payload.h).
    std::uint32_t origin = 0, worker = 0;
    std::uint64_t incarnation = 0, seq = 0;
    std::int64_t iteration = 0;
    std::shared_ptr<EncodedUpdate> update;
    try {
        UpdatePayload parsed = parse_update_payload(m.payload, cluster_, static_cast<std::uint32_t>(n_));
        origin = parsed.header.origin;
        incarnation = parsed.header.incarnation;
        seq = parsed.header.sequence;
        worker = parsed.header.worker;
        iteration = parsed.header.iteration;
        update = std::make_shared<EncodedUpdate>(std::move(parsed.update));
    } catch (const Error& e) {
        ++rejected_;
        warn("update from node " + std::to_string(m.sender) + " rejected: " + e.what());
        return;
    }
    const int from = static_cast<int>(origin);
    std::vector<int> onward;
    {
        std::lock_guard lock(mutex_);
        if (!observe(from, incarnation)) return;  // an earlier process of the origin
        Peer& o = peers_[static_cast<std::size_t>(from)];
        if (o.updates.state(seq) != IdWindow::State::New) {
            ++duplicates_;
            return;
        }
        if (topology_.kind != TopologyKind::Mesh)  // in a mesh the origin reached everyone itself
            for (int node : routes(false).neighbours(cluster_.node_rank))
                if (node != m.sender && node != from) onward.push_back(node);
        // Under the lock: once drain_remote() has returned, the master may be destroyed at any
        // moment, so nothing may still be on its way into it.
        if (delivering_ && sharing_)
            sharing_->deliver_remote(static_cast<int>(worker), static_cast<long>(iteration), std::move(update));
        // Counted once delivered: a node has drained an origin when every number up to its
        // "done"'s count is here, and by then those updates must already sit in the inboxes.
        o.updates.mark_done(seq);
        o.last_news = clock_->now();
        give_up_old_hole(from);
        clock_->notify_all(changed_);
    }
    for (int node : onward) transport_->send(node, MessageType::Update, m.payload);
    relayed_ += onward.size();
}

void NodeLink::give_up_old_hole(int origin) {
    Peer& o = peers_[static_cast<std::size_t>(origin)];
    const auto end = o.updates.lowest_above();
    const auto now = clock_->now();
    if (!end) {
        o.hole_since = {};
        return;
    }
    if (o.hole_since == std::chrono::steady_clock::time_point{} || o.hole_floor != o.updates.floor()) {
        o.hole_floor = o.updates.floor();  // a new first hole
        o.hole_since = now;
        return;
    }
    if (now - o.hole_since < deadlines_.hole) return;
    const std::uint64_t first = o.updates.floor() + 1, last = *end - 1, count = last - first + 1;
    o.updates.advance_floor(last);
    o.hole_floor = o.updates.floor();
    o.hole_since = o.updates.lowest_above() ? now : std::chrono::steady_clock::time_point{};
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", std::chrono::duration<double>(deadlines_.hole).count());
    warn(std::to_string(count) + " of node " + std::to_string(origin) + "'s messages (numbers " + std::to_string(first) +
         (count > 1 ? ".." + std::to_string(last) : std::string()) + ") never arrived while later ones did for " + seconds +
         " s (a node that relayed them is gone); the run goes on without them and the final reconciliation evens the "
         "replicas out");
}

GradientSharing::Outbox NodeLink::outbox() {
    return [this](int worker, long iteration, const std::vector<std::uint8_t>& bytes) {
        UpdateHeader header;
        std::vector<int> dests;
        {
            std::lock_guard lock(mutex_);
            header.origin = static_cast<std::uint32_t>(cluster_.node_rank);
            header.incarnation = own_incarnation();
            header.sequence = ++updates_sent_;
            // Members, and new processes that will join: what they get before their snapshot
            // arrives is applied on top of it (a few updates of slack, evened out at the end).
            dests = routes(false).neighbours(cluster_.node_rank);
        }
        header.worker = static_cast<std::uint32_t>(worker);
        header.iteration = static_cast<std::int64_t>(iteration);
        std::vector<std::uint8_t> payload;
        payload.reserve(kUpdateHeaderBytes + bytes.size());
        put_update_header(payload, header);
        payload.insert(payload.end(), bytes.begin(), bytes.end());
        for (int node : dests) transport_->send(node, MessageType::Update, payload);
    };
}

void NodeLink::attach(GradientSharing& sharing) {
    std::lock_guard lock(mutex_);
    sharing_ = &sharing;
    for (int node = 0; node < cluster_.nodes; ++node)
        if (node != cluster_.node_rank) set_state(node, peers_[static_cast<std::size_t>(node)].state);
}

}  // namespace thresher::dist
