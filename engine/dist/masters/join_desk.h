// JoinDesk: joining's bookkeeping -- one of NodeLink's parts (node_link.h "Starting and joining"),
// with its own lock. On the controller: the requests waiting for an answer, per node the process
// last answered and that answer (a repeated request gets it again; replays of older processes are
// refused), whether the start is over (later requests get snapshots) and whether the drain began
// (requests are refused). On the other nodes: the controller's answer to us. It decides and keeps
// answers; the link sends them. It never calls out.
#pragma once

#include "core/guarded.h"

#include <chrono>
#include <map>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dist/masters/join_protocol.h"

namespace thresher::dist {

class JoinDesk {
public:
    struct Request {
        int node;
        std::uint64_t incarnation;
        bool again = false;  // its answer (a snapshot) was lost: answer once more
    };

    explicit JoinDesk(int nodes);
    // Whether nodes may join once training has begun (gradient sharing), and how long the
    // controller waits for every node at the start.
    void set_policy(bool mid_run, std::chrono::milliseconds wait);
    std::chrono::milliseconds start_wait() const;

    // Controller: a request of `node`'s process `incarnation` came. What to do with it:
    struct Decision {
        enum class Kind { Stale, Queued, Answer } kind = Kind::Queued;
        std::vector<std::uint8_t> answer;  // Answer: send this (an earlier answer again, or a refusal)
    };
    Decision request(int node, std::uint64_t incarnation);
    std::vector<Request> take_requests();
    // The start is over: from now on requests are answered with snapshots. `asked`: node -> the
    // process that asked in time, which gets Start (its answer follows with answered()).
    void begin(const std::map<int, std::uint64_t>& asked);
    // The answer sent to `node`'s process `incarnation` (kept to send again if asked again).
    void answered(int node, std::uint64_t incarnation, std::vector<std::uint8_t> answer);
    // The drain begins: later requests are refused; returns those still waiting (to refuse now).
    std::vector<Request> finish();
    // A snapshot for `q` after a step: whether that node had been in the run before (a rejoin), or
    // nullopt when the request was answered meanwhile. The snapshot is not kept (taken afresh when asked again).
    std::optional<bool> serve_snapshot(const Request& q);

    // Other nodes: the controller's answer, and taking it when it is for our process `me`.
    void reply_arrived(JoinReply reply);
    std::optional<JoinReply> take_reply(std::uint64_t me);

private:
    struct Served {
        std::uint64_t incarnation = 0;   // the process last answered
        std::vector<std::uint8_t> answer;  // that answer, when it was Start or Refused
        bool rejoin = false;             // that answer was a snapshot of a rejoin
    };
    mutable Mutex mutex_;
    std::vector<Served> served_ THRESHER_GUARDED_BY(mutex_);  // by node
    std::vector<Request> requests_ THRESHER_GUARDED_BY(mutex_);
    bool mid_run_ THRESHER_GUARDED_BY(mutex_) = true;
    std::chrono::milliseconds wait_ THRESHER_GUARDED_BY(mutex_){30000};
    bool started_ THRESHER_GUARDED_BY(mutex_) = false;
    bool finishing_ THRESHER_GUARDED_BY(mutex_) = false;
    std::optional<JoinReply> reply_ THRESHER_GUARDED_BY(mutex_);
};

}  // namespace thresher::dist
