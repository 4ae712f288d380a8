// RoundBook: what NodeLink's averaging rounds (node_link_rounds.cpp) have received and finished,
// under its own lock -- the sums each node sent for a round, the results that came back, which
// parent acknowledged our sums, the last finished results (for late sums and for results asked
// for again), the asks waiting to be served and who has not confirmed our last result. The receive
// threads fill it; the round waits on the link's signal (link_signal.h; the link notifies it after
// each message) and reads it here. It never calls out.
#pragma once

#include "core/guarded.h"

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "dist/net/transport.h"

namespace thresher::dist {

class RoundBook {
public:
    // A node's sums for `round`. A round already finished here returns its result (the sender
    // came to us late, e.g. its parent went away mid-round); otherwise the sums are kept (a
    // restarted node's replace its predecessor's) and nullopt is returned.
    std::optional<std::vector<std::uint8_t>> add_sums(std::uint64_t round, Message&& sums);
    bool has_sums(std::uint64_t round, int node) const;
    // Takes the sums of `round` of the nodes for which `keep` says true; forgets the round.
    template <typename Keep>
    std::vector<Message> take_sums(std::uint64_t round, Keep keep) {
        MutexLock lock(mutex_);
        std::vector<Message> out;
        if (auto it = sums_.find(round); it != sums_.end()) {
            for (auto& [node, part] : it->second)
                if (keep(node)) out.push_back(std::move(part));
            sums_.erase(it);
        }
        return out;
    }

    void add_result(std::uint64_t round, Message&& result);  // the first copy counts
    bool has_result(std::uint64_t round) const;
    // The result of `round`, forgetting it and every earlier round's results and acknowledgements.
    std::vector<std::uint8_t> take_result(std::uint64_t round);

    void acknowledged(std::uint64_t round, int node);
    void forget_ack(std::uint64_t round);
    std::optional<int> acknowledged_by(std::uint64_t round) const;

    // Our result of `round`, kept (the last kKeep rounds) for late sums and asks.
    void finished(std::uint64_t round, std::vector<std::uint8_t> result);
    // `node` asks for the result of `round` again; ignored for a round not kept, and past a cap.
    void asked(int node, std::uint64_t round);
    // The asks with their results, to send now.
    std::vector<std::pair<int, std::vector<std::uint8_t>>> take_asks();

    // The nodes `round`'s result went to, which must confirm it before this node leaves (after the
    // last round a lost result could not be asked for again from a process that has ended).
    void expect_confirmations(std::uint64_t round, std::vector<int> nodes);
    void confirmed(std::uint64_t round, int node);
    void forget_confirmation(int node);  // it is gone
    std::vector<int> unconfirmed() const;

    static constexpr std::size_t kKeep = 4;
    static constexpr std::size_t kMaxAsks = 64;

private:
    mutable Mutex mutex_;
    std::map<std::uint64_t, std::map<int, Message>> sums_ THRESHER_GUARDED_BY(mutex_);              // round -> node -> its sums
    std::map<std::uint64_t, Message> results_ THRESHER_GUARDED_BY(mutex_);                           // round -> the cluster's sums
    std::map<std::uint64_t, int> acks_ THRESHER_GUARDED_BY(mutex_);                                  // round -> who acknowledged ours
    std::map<std::uint64_t, std::vector<std::uint8_t>> finished_ THRESHER_GUARDED_BY(mutex_);        // round -> our result
    std::vector<std::pair<int, std::uint64_t>> asks_ THRESHER_GUARDED_BY(mutex_);                    // (node, round)
    std::uint64_t confirm_round_ THRESHER_GUARDED_BY(mutex_) = ~std::uint64_t{0};                    // the last round we sent results in
    std::vector<int> unconfirmed_ THRESHER_GUARDED_BY(mutex_);                                       // who has not confirmed it
};

}  // namespace thresher::dist
