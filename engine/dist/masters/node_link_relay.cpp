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
    if (!observe(from, incarnation)) return;  // an earlier process of the origin
    {
        // The claim and the delivery under one lock, which the drain takes to end deliveries: once
        // drain_remote() has returned, the master may be destroyed at any moment, so nothing may
        // still be on its way into it; and a message counts as here (the drain is complete when
        // every number up to an origin's "done" count is) only together with its delivery.
        MutexLock lock(delivery_mutex_);
        if (ledger_.claim(from, incarnation, seq, clock_->now()) != UpdateLedger::Claim::New) return;
        if (delivering_)
            if (GradientSharing* sharing = sharing_.load())
                sharing->deliver_remote(static_cast<int>(worker), static_cast<long>(iteration), std::move(update));
    }
    give_up_old_hole(from);
    signal_.notify();
    if (topology_.kind != TopologyKind::Mesh) {  // in a mesh the origin reached everyone itself
        std::vector<int> onward;
        for (int node : routes(false).neighbours(cluster_.node_rank))
            if (node != m.sender && node != from) onward.push_back(node);
        for (int node : onward) transport_->send(node, MessageType::Update, m.payload);
        relayed_ += onward.size();
    }
}

void NodeLink::give_up_old_hole(int origin) {
    const auto gone = ledger_.give_up_old_hole(origin, clock_->now(), deadlines_.hole);
    if (!gone) return;
    const std::uint64_t count = gone->last - gone->first + 1;
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", std::chrono::duration<double>(deadlines_.hole).count());
    warn(std::to_string(count) + " of node " + std::to_string(origin) + "'s messages (numbers " +
         std::to_string(gone->first) + (count > 1 ? ".." + std::to_string(gone->last) : std::string()) +
         ") never arrived while later ones did for " + seconds +
         " s (a node that relayed them is gone); the run goes on without them and the final reconciliation evens the "
         "replicas out");
}

GradientSharing::Outbox NodeLink::outbox() {
    return [this](int worker, long iteration, const std::vector<std::uint8_t>& bytes) {
        UpdateHeader header;
        header.origin = static_cast<std::uint32_t>(cluster_.node_rank);
        header.incarnation = own_incarnation();
        // Numbered before the routes are read: a new process is given first_seq = (numbers taken
        // so far) + 1 when membership notes it, so a number taken before that and sent to it
        // anyway is below its floor and dropped there, and one taken after reaches it.
        header.sequence = ++updates_sent_;
        // Members, and new processes that will join: what they get before their snapshot arrives
        // is applied on top of it (a few updates of slack, evened out at the end).
        const std::vector<int> dests = routes(false).neighbours(cluster_.node_rank);
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
    sharing_ = &sharing;
    // Gradient sharing's staleness bound waits only for members' messages. Not once the master's
    // drain is over: it may be gone by then.
    membership_.set_hook([this](int node, bool waited) {
        if (!delivering_) return;
        if (GradientSharing* s = sharing_.load()) s->set_node_waited(node, waited);
    });
}

}  // namespace thresher::dist
