// NodeLink, part 3: rounds among the nodes -- averaging (a star on node 0, or reduced up a tree:
// topology.h), the final reconcile of gradient sharing, and the merge of distributed evaluation.
#include "dist/masters/node_link.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "dist/masters/evaluation_payload.h"
#include "dist/masters/node_link_control.h"
#include "dist/masters/round_payload.h"
#include "train/finite_guard.h"

namespace thresher::dist {


void NodeLink::reconcile(const std::vector<nn::Network*>& replicas) {
    if (left()) return;  // stopped and left: the others do not wait in this round
    const std::size_t p = replicas.front()->param_count();
    std::vector<double> sums(p, 0.0), no_state;
    for (auto* net : replicas) {
        const auto params = net->get_params();
        for (std::size_t i = 0; i < p; ++i) sums[i] += params[i];
    }
    int workers = static_cast<int>(replicas.size());
    try {
        reduce(sums, no_state, workers);
    } catch (const Error& e) {
        throw_if_fatal();  // the run went on without this node: that is its error
        warn(std::string("final reconciliation failed, replicas may differ: ") + e.what());
        return;
    }
    std::vector<float> mean(p);
    for (std::size_t i = 0; i < p; ++i) mean[i] = static_cast<float>(sums[i] / workers);
    // How far this node's replicas were from the average before it replaces them: after a
    // complete drain, gradient sharing's replicas are already equal, and the reconcile changes
    // nothing. A gap says messages were lost (a dead relay, a dropped node) or the drain is broken,
    // which the replicas' equality after the reconcile would hide.
    double gap = 0.0;
    std::size_t where = 0;
    for (auto* net : replicas) {
        const auto params = net->get_params();
        for (std::size_t i = 0; i < p; ++i)
            if (const double d = std::abs(static_cast<double>(params[i]) - mean[i]); d > gap) {
                gap = d;
                where = i;
            }
    }
    for (auto* net : replicas) net->set_params(mean);
    events::ReconcileReport report{gap, std::nullopt};
    if (gap > 0) report.at = train::describe_parameter(replicas.front()->config(), where);
    MutexLock lock(mutex_);
    reconcile_report_ = std::move(report);
}

std::optional<events::ReconcileReport> NodeLink::reconcile_report() const {
    MutexLock lock(mutex_);
    return reconcile_report_;
}

ParameterAveraging::Reducer NodeLink::reducer() {
    return [this](std::vector<double>& params, std::vector<double>& state, int& workers) { reduce(params, state, workers); };
}

void NodeLink::reduce(std::vector<double>& params, std::vector<double>& state, int& workers) {
    // Over the tree of rounds (a star on node 0 unless topology_.tree_rounds). Up: wait for our
    // children's sums (each holds its subtree's), add ours, pass them to our parent. Down: the
    // root's totals come back from the parent and go on to the children. Only members take part;
    // a child that is gone is not waited for, and its children come to us instead (topology.h),
    // re-sending their sums when they notice their parent is gone.
    const std::uint64_t round = round_++;
    const int me = cluster_.node_rank;
    auto controller_gone = [&] {
        throw_if_fatal();
        if (me != 0 && peer_lost(0))
            throw Error("the controller (node 0) is gone, so averaging round " + std::to_string(round) + " cannot happen");
    };
    controller_gone();
    const auto begun = clock_->now();
    const LinkDeadlines limits = deadlines_;
    auto seconds = [](std::chrono::milliseconds d) { return std::to_string(d.count() / 1000.0).substr(0, 5) + " s"; };
    for (;;) {
        const auto seen = signal_.generation();
        bool all_in = true;
        int missing = -1;
        for (int child : routes(true).children(me))
            if (!rounds_.has_sums(round, child)) {
                poke(child);
                if (!peer_lost(child)) {
                    all_in = false;
                    missing = child;
                }
            }
        if (all_in) break;
        // A child that is alive (it answers heartbeats) but sends no sums, even after its own
        // resends, is stalled: fail rather than wait forever.
        if (clock_->now() - begun > limits.round)
            throw Error("averaging round " + std::to_string(round) + ": node " + std::to_string(missing) +
                        " answers but sent no sums within " + seconds(limits.round) + " (a stalled node)");
        signal_.wait(seen, std::chrono::milliseconds(100));
    }
    // Everyone's sums that came, not only our children's: a node whose view of who is gone
    // differs from ours may take us for its parent, and then waits for our answer.
    const std::vector<bool> members = membership_.members();
    std::vector<Message> parts = rounds_.take_sums(round, [&](int node) { return members[static_cast<std::size_t>(node)]; });
    std::vector<int> below;
    for (const auto& part : parts) below.push_back(part.sender);
    for (const auto& part : parts)
        if (!add_sums(part.payload, round, params, state, workers, false))
            warn("averaging round " + std::to_string(round) + ": malformed sums from node " + std::to_string(part.sender) + " ignored");
    std::vector<std::uint8_t> result = pack_sums(round, workers, params, state);
    // The root keeps the sums as the others receive them (rounded to float on the wire), so that
    // every replica ends bit for bit the same, not within one rounding of the controller's.
    if (me == 0) add_sums(result, round, params, state, workers, true);
    if (me != 0) {
        // Our sums go to our parent, which acknowledges them. Over TCP a frame written on a
        // connection that stays open arrives, however long the link takes: they are sent again
        // when that connection closed without an acknowledgement (the frame may have died with
        // it), or, over datagrams alone, when none came within ack_wait of the send. With an
        // acknowledgement but no result, the parent is asked again once nothing of it has arrived
        // for result_ask (a result on its way over a slow link is not asked for twice).
        int parent = -1;
        auto sent_at = clock_->now(), asked_at = sent_at;
        std::uint64_t losses_at_send = 0;
        bool resend = true;
        for (;;) {
            const auto seen = signal_.generation();
            throw_if_fatal();
            if (rounds_.has_result(round)) break;
            const auto now = clock_->now();
            const int current = routes(true).parent(me);
            // The controller gone, the round can still end here when our parent is another live
            // node: it finished the round before the controller left (a chain 0 - 1 - 2: node 1
            // had the result, and its frame to node 2 died with its connection) and answers a
            // result ask. A parent that has no result fails by the same check and leaves, and
            // then we do.
            if (me != 0 && peer_lost(0) && (current <= 0 || peer_lost(current))) controller_gone();
            if (current != parent) {  // the first time, and again when our parent went away
                parent = current;
                rounds_.forget_ack(round);
                resend = true;
            }
            const bool acked = rounds_.acknowledged_by(round) == parent;
            if (!acked && !resend) {
                const bool lost = bulk_ ? bulk_->connections_lost(parent) != losses_at_send : now - sent_at > limits.ack_wait;
                if (lost) {
                    warn("averaging round " + std::to_string(round) + ": node " + std::to_string(parent) +
                         (bulk_ ? " closed the connection before it acknowledged this node's sums"
                                : " did not acknowledge this node's sums within " + seconds(limits.ack_wait)) +
                         "; sending them again");
                    resend = true;
                }
            }
            if (resend) {
                resend = false;
                if (bulk_) losses_at_send = bulk_->connections_lost(parent);
                try {
                    send_large(parent, MessageType::Average, result);
                } catch (const Error& e) {
                    // Not sent (the connect itself waited up to its timeout): again on the next
                    // turn, unless the parent is gone by then.
                    warn("averaging round " + std::to_string(round) + ": " + e.what() + "; trying again");
                    resend = true;
                }
                sent_at = asked_at = clock_->now();  // the deadlines count from the end of the write
                // Then wait below like any other turn: a connection that keeps resetting is not
                // hammered, and what arrived meanwhile (the result, an ack) is looked at first.
            } else if (acked) {
                auto quiet_since = asked_at;
                if (bulk_)
                    if (const auto moved = bulk_->last_progress(parent); moved && *moved > quiet_since) quiet_since = *moved;
                if (now - quiet_since > limits.result_ask) {
                    asked_at = now;
                    send_control(parent, node_link_control::kResultAsk, round);
                }
            }
            if (now - begun > limits.round)
                throw Error("averaging round " + std::to_string(round) + ": no result from node " + std::to_string(parent) +
                            " within " + seconds(limits.round) + (acked ? " (it acknowledged this node's sums)" : ""));
            poke(parent);
            peer_lost(parent);
            signal_.wait(seen, std::chrono::milliseconds(100));
        }
        result = rounds_.take_result(round);
        if (!add_sums(result, round, params, state, workers, true))
            throw Error("averaging round " + std::to_string(round) + ": malformed result from node " + std::to_string(parent));
    }
    for (int child : routes(true).children(me))
        if (std::find(below.begin(), below.end(), child) == below.end()) below.push_back(child);
    rounds_.finished(round, result);
    // Until each of them confirms the result, this node must not leave: after the last round (the
    // final reconcile, averaging's last average) a result lost with its connection could not be
    // asked for again from a process that has ended (~NodeLink waits for the confirmations).
    rounds_.expect_confirmations(round, below);
    for (int node : below) {
        try {
            send_large(node, MessageType::AverageResult, result);
        } catch (const Error& e) {
            warn("averaging round " + std::to_string(round) + ": node " + std::to_string(node) + ": " + e.what());
        }
    }
}

std::optional<std::vector<nlohmann::json>> NodeLink::gather_evaluation(int epoch, const nlohmann::json& local) {
    if (cluster_.node_rank != 0) {
        if (!membership_.waited_for(0)) return std::nullopt;  // the controller is gone: nobody merges
        transport_->send(0, MessageType::Evaluation, pack_evaluation(static_cast<std::int32_t>(epoch), local));
        evaluations_.sent(epoch);
        return std::nullopt;
    }
    const auto begun = clock_->now();
    for (;;) {
        const auto seen = signal_.generation();
        bool all_in = true;
        const bool late = clock_->now() - begun > deadlines_.gather;
        for (int node = 1; node < cluster_.nodes; ++node)
            if (membership_.waited_for(node) && !evaluations_.has(epoch, node)) {
                if (late) {
                    warn("evaluation of epoch " + std::to_string(epoch) + ": node " + std::to_string(node) +
                         "'s part did not come within " + std::to_string(deadlines_.gather.count() / 1000) +
                         " s; the merged result leaves its shard out");
                    continue;
                }
                // A node that said "done" after its last part for an earlier epoch stopped
                // training before this epoch's end (SIGTERM, stdin closed): this part never comes.
                // It is alive and draining, waiting for our "done", so without this both would
                // wait for each other until the engines' stop deadline ends them.
                if (ledger_.stopped_before(node, epoch)) continue;
                poke(node);
                all_in = !peer_lost(node) ? false : all_in;
            }
        if (all_in) break;
        signal_.wait(seen, std::chrono::milliseconds(100));
    }
    std::vector<nlohmann::json> parts{local};
    const std::vector<bool> members = membership_.members();
    for (auto& [node, part] : evaluations_.take(epoch, [&](int node) { return members[static_cast<std::size_t>(node)]; }))
        parts.push_back(std::move(part));
    return parts;
}

}  // namespace thresher::dist
