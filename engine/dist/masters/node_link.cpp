// NodeLink: the receive loops, routing of what arrives, control messages and traffic. The other
// parts: node_link_membership.cpp (peers and their processes), node_link_relay.cpp (gradient-
// sharing messages: sending, relaying, deduplicating), node_link_drain.cpp, node_link_join.cpp,
// node_link_rounds.cpp (with round_book.h).
#include "dist/masters/node_link.h"

#include "config/json_fields.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "dist/masters/evaluation_payload.h"
#include "dist/masters/node_link_control.h"
#include "dist/masters/payload_io.h"

namespace thresher::dist {

namespace {

using namespace node_link_control;

using payload_io::get;
using payload_io::put;

}  // namespace

NodeLink::NodeLink(std::unique_ptr<Transport> transport, const train::ClusterShape& cluster, std::size_t param_count,
                   events::EventWriter* events, std::unique_ptr<Stream> bulk, Clock& clock)
    : clock_(&clock), transport_(std::move(transport)), cluster_(cluster), n_(param_count), events_(events),
      bulk_(std::move(bulk)), signal_(clock), membership_(cluster.nodes, cluster.node_rank), ledger_(cluster.nodes),
      desk_(cluster.nodes) {
    if (bulk_) bulk_->set_param_count(param_count);  // bounds every payload before it is read
}

void NodeLink::set_join_policy(bool mid_run, std::chrono::milliseconds wait) { desk_.set_policy(mid_run, wait); }

void NodeLink::set_deadlines(const LinkDeadlines& d) { deadlines_ = d; }

void NodeLink::set_fatal(const std::string& why, bool only_if_unset) {
    MutexLock lock(mutex_);
    if (!only_if_unset || fatal_.empty()) fatal_ = why;
}

void NodeLink::throw_if_fatal() const {
    MutexLock lock(mutex_);
    if (!fatal_.empty()) throw Error(fatal_);
}

bool NodeLink::left() const {
    MutexLock lock(mutex_);
    return left_;
}

void NodeLink::send_control(int node, std::uint8_t kind, std::uint64_t round) {
    Control c;
    c.kind = kind;
    c.round = round;
    transport_->send(node, MessageType::Control, pack_control(c));
}

void NodeLink::serve_resends() {
    for (const auto& [node, result] : rounds_.take_asks()) {
        try {
            send_large(node, MessageType::AverageResult, result);
        } catch (const Error& e) {
            warn(std::string("sending an averaging result again: ") + e.what());
        }
    }
}

void NodeLink::start() {
    if (!receiver_.joinable()) receiver_ = clock_->spawn([this] { receive_loop(); });
    if (bulk_ && !bulk_receiver_.joinable()) bulk_receiver_ = clock_->spawn([this] { bulk_loop(); });
}

void NodeLink::bulk_loop() {
    while (!stop_) {
        auto m = bulk_->receive(std::chrono::milliseconds(50));
        if (m) handle(std::move(*m), false);
        serve_resends();
    }
}

void NodeLink::send_large(int dest, MessageType type, const std::vector<std::uint8_t>& payload) {
    if (bulk_)
        bulk_->send(dest, type, payload);
    else
        transport_->send(dest, type, payload);
}

NodeLink::~NodeLink() {
    // The last round's result must have reached every node it was sent to (or the node is gone):
    // a lost one is asked for again (after result_ask without bytes from us), and only a live
    // process can answer -- as often as it asks: a result lost twice in a row (two connection
    // resets) must not leave that node without it. So wait while the node is alive; a process
    // that ends or stays silent is declared gone within `silence`. Bounded by the round deadline.
    const auto until = clock_->now() + deadlines_.round;
    while (clock_->now() < until) {
        const auto seen = signal_.generation();
        bool waiting = false;
        for (int node : rounds_.unconfirmed()) {
            if (peer_lost(node)) {
                rounds_.forget_confirmation(node);
                continue;
            }
            waiting = true;
            poke(node);
        }
        if (!waiting) break;
        signal_.wait(seen, std::chrono::milliseconds(50));
    }
    // Our process ends now: tell the others, so that our silence from here on is not taken for a
    // node that stopped answering (they would warn ~silence later, after a run that ended well).
    // Not after a failure: then the others are right to say this node is gone.
    if (finished_) {
        Control finished;
        finished.kind = kFinished;
        const auto bytes = pack_control(finished);
        for (int node : membership_.not_gone()) transport_->send(node, MessageType::Control, bytes);
    }
    stop_ = true;
    signal_.notify();
    clock_->join(receiver_);
    clock_->join(bulk_receiver_);
    // Give the last acknowledgements a moment, so peers do not retransmit into a closed port.
    transport_->flush(std::chrono::milliseconds(2000));
}

void NodeLink::warn(const std::string& message) {
    if (events_) events_->warning(message);
}

std::uint64_t NodeLink::own_incarnation() const {
    const std::uint64_t i = transport_->incarnation();
    return i != 0 ? i : 1;  // a transport without incarnations (in memory) never restarts
}

void NodeLink::receive_loop() {
    auto last_look = clock_->now();
    while (!stop_) {
        auto m = transport_->receive(std::chrono::milliseconds(50));
        if (m) handle(std::move(*m), true);
        if (!bulk_) serve_resends();
        // The transport hears of a restarted peer (its hellos) before any message from it: look
        // now and then, so that a restarted controller is told to stop even if it never sends.
        const auto now = clock_->now();
        if (now - last_look < std::chrono::milliseconds(50)) continue;
        last_look = now;
        for (int node = 0; node < cluster_.nodes; ++node)
            if (node != cluster_.node_rank) observe(node, transport_->peer_incarnation(node));
        // A peer the transport gave up on is declared gone now, not when an exchange next waits on
        // it: until then the staleness bound waits for its workers every step, and in a tree or a
        // relay star its neighbours keep routing through it, so nothing reaches past it (a dead
        // relay cut the chain 0 - 1 - 2 for the rest of the run, and node 2 noticed only in its drain).
        // Members only: a process that is joining may not have answered yet, and the transport's
        // verdict can still be about what was sent before it started (a late node was declared gone
        // the moment it appeared); the drain looks at joining ones.
        for (int node : transport_->unreachable_peers())
            if (node != cluster_.node_rank && membership_.waited_for(node)) peer_lost(node);
    }
}

void NodeLink::handle(Message&& m, bool counted) {
    if (m.sender < 0 || m.sender >= cluster_.nodes || m.sender == cluster_.node_rank) return;
    const int sender = m.sender;
    if (counted && !observe(sender, m.incarnation)) return;
    switch (m.type) {
        case MessageType::Update: handle_update(m); break;
        case MessageType::Control: handle_control(m); break;
        case MessageType::Average: {
            std::uint64_t round = 0;
            std::span<const std::uint8_t> in(m.payload);
            if (!get(in, round)) break;
            // A late one (tree: its parent went away mid-round and it came to us) gets the result.
            const auto late = rounds_.add_sums(round, std::move(m));
            // Acknowledged over the datagram transport: a sender that hears nothing sends again
            // (its frame may have died with a reset connection).
            send_control(sender, kRoundAck, round);
            if (late) {
                try {
                    send_large(sender, MessageType::AverageResult, *late);
                } catch (const Error& e) {
                    warn("averaging round " + std::to_string(round) + ": node " + std::to_string(sender) + ": " + e.what());
                }
            }
            break;
        }
        case MessageType::AverageResult: {
            std::uint64_t round = 0;
            std::span<const std::uint8_t> in(m.payload);
            if (!get(in, round)) break;
            rounds_.add_result(round, std::move(m));
            send_control(sender, kResultAck, round);  // the sender may leave now (~NodeLink)
            break;
        }
        case MessageType::Evaluation: {
            try {
                // Authenticated, but a peer's bug must not overflow our stack (evaluation_payload.h).
                auto part = parse_evaluation(m.payload, "evaluation from node " + std::to_string(sender));
                evaluations_.add(part.epoch, sender, std::move(part.counts));
            } catch (const std::exception& e) {
                warn("evaluation from node " + std::to_string(sender) + " rejected: " + e.what());
            }
            break;
        }
        case MessageType::ParamsRequest: handle_join_request(m); break;
        case MessageType::Params: {
            if (cluster_.node_rank == 0 || sender != 0) break;
            auto reply = parse_join_reply(m.payload, cluster_.nodes, n_);
            if (!reply) {
                ++rejected_;
                warn("a malformed answer from the controller to this node's join request was ignored");
                break;
            }
            desk_.reply_arrived(std::move(*reply));
            break;
        }
        default: break;
    }
    signal_.notify();
}

void NodeLink::handle_control(const Message& m) {
    const auto c = parse_control(m.payload);
    if (!c) return;
    const std::uint8_t kind = c->kind;
    const int sender = m.sender;
    if (kind == kDone) {
        ledger_.note_done(sender, m.incarnation, c->originated, c->first, c->evaluated, clock_->now());
    } else if (kind == kJoined) {
        if (cluster_.node_rank != 0) joined(sender, c->epoch, static_cast<long>(c->iteration), c->rejoin, false);
    } else if (kind == kLeft) {
        if (membership_.leave(sender, m.incarnation))
            warn("node " + std::to_string(sender) + "'s run was stopped; the run goes on without it" +
                 (sender == 0 ? " (and without a controller: no more joins, evaluation merged per node)" : ""));
    } else if (kind == kFinished) {
        membership_.finished(sender, m.incarnation);
    } else if (kind == kFirst) {
        if (membership_.current(sender, m.incarnation)) {
            ledger_.advance_floor(sender, m.incarnation, c->first);  // sent before this process was its destination
            give_up_old_hole(sender);                                 // a hole below the new floor is no hole
        }
    } else if (kind == kResultAck) {
        rounds_.confirmed(c->round, sender);
    } else if (kind == kRoundAck) {
        rounds_.acknowledged(c->round, sender);
    } else if (kind == kResultAsk) {
        rounds_.asked(sender, c->round);
    } else if (kind == kGone && sender == 0 && cluster_.node_rank != 0 && membership_.current(sender, m.incarnation)) {
        // The controller went on without us: what we train no longer reaches the run, and the
        // final reconcile would not take us. Another node's verdict is its own view of a cut.
        std::string why = c->reason.empty() ? "node " + std::to_string(sender) + " declared this node gone" : c->reason;
        bool first = false;
        {
            MutexLock lock(mutex_);
            if (fatal_.empty()) {
                fatal_ = why;
                first = true;
            }
        }
        if (first) warn(why);
    } else if (kind == kStop && cluster_.node_rank == 0) {
        set_fatal(c->reason.empty() ? "node " + std::to_string(sender) + " told this controller to stop" : c->reason);
    }
}

events::Traffic NodeLink::traffic() const {
    const auto s = transport_->stats();
    const std::uint64_t bulk_tx = bulk_ ? bulk_->bytes_tx() : 0, bulk_rx = bulk_ ? bulk_->bytes_rx() : 0;
    return {s.bytes_tx + bulk_tx, s.bytes_rx + bulk_rx, s.dropped_total(), s.retransmitted, relayed_.load()};
}

}  // namespace thresher::dist
