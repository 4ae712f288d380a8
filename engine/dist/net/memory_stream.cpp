// MemoryStreamHub and MemoryStream (memory_stream.h). One mutex guards the hub, as in
// memory_transport.cpp: a test harness, where one lock keeps every interleaving easy to follow.
// Frames in flight are few (a round's sums, a join answer), so they sit in one list.
#include "dist/net/memory_stream.h"

#include <algorithm>
#include <condition_variable>
#include <list>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"

namespace thresher::dist {

namespace {

struct Frame {
    int from = -1, to = -1;
    MessageType type{};
    std::vector<std::uint8_t> payload;
    std::uint64_t incarnation = 0;  // the sender's process
    std::uint64_t seq = 0;          // hub-wide hand-over order: per pair, the delivery order
    Clock::time_point starts{}, arrives{};
};

struct StreamRank {
    explicit StreamRank(int world) : progress(world), losses(world, 0), touched(world, false) {}
    bool connected = false;
    bool alive = true;
    std::uint64_t incarnation = 0;
    std::vector<std::optional<Clock::time_point>> progress;  // by peer: a frame last completed
    std::vector<std::uint64_t> losses;                       // by peer: connections lost
    std::vector<bool> touched;                               // by peer: a connection was ever made
    std::uint64_t tx = 0, rx = 0;
};

}  // namespace

struct MemoryStreamHubState {
    MemoryStreamHubState(int world, double rate, Clock& clock)
        : world(world), rate(rate), clock(&clock), free_at(world, std::vector<Clock::time_point>(world)) {
        for (int r = 0; r < world; ++r) ranks.emplace_back(world);
    }
    void check_rank(int rank, const char* what) const {
        if (rank < 0 || rank >= world)
            throw Error(std::string("memory stream: ") + what + " rank " + std::to_string(rank) + " outside 0.." +
                        std::to_string(world - 1));
    }
    bool flowing(const Frame& f) const {
        return ranks[f.from].alive && ranks[f.to].alive && ranks[f.from].connected && ranks[f.to].connected;
    }

    const int world;
    const double rate;  // bytes per second per pair; 0: at once
    Clock* const clock;
    std::mutex mutex;
    std::condition_variable changed;
    std::vector<StreamRank> ranks;
    std::vector<std::vector<Clock::time_point>> free_at;  // [from][to]: when the pair's link is free
    std::list<Frame> flight;
    std::uint64_t next_seq = 0;
    MemoryStreamHub::Loss lose;
};

MemoryStreamHub::MemoryStreamHub(int world, double bytes_per_second, Clock& clock)
    : state_(std::make_shared<MemoryStreamHubState>(world, bytes_per_second, clock)) {}

std::unique_ptr<MemoryStream> MemoryStreamHub::connect(int rank, std::uint64_t incarnation) {
    std::lock_guard lock(state_->mutex);
    state_->check_rank(rank, "connect:");
    StreamRank& r = state_->ranks[rank];
    if (r.connected) throw Error("memory stream: rank " + std::to_string(rank) + " is already connected");
    r.connected = true;
    r.alive = true;  // a restarted process on a reachable host
    r.incarnation = incarnation;
    state_->clock->notify_all(state_->changed);
    return std::make_unique<MemoryStream>(state_, rank);
}

void MemoryStreamHub::set_alive(int rank, bool alive) {
    std::lock_guard lock(state_->mutex);
    state_->check_rank(rank, "set_alive:");
    state_->ranks[rank].alive = alive;
    if (alive) {
        // What stalled while the host was cut off moves again from now: arrival no earlier than now.
        const auto now = state_->clock->now();
        for (auto& f : state_->flight)
            if ((f.from == rank || f.to == rank) && f.arrives < now) f.arrives = now;
    }
    state_->clock->notify_all(state_->changed);
}

void MemoryStreamHub::set_loss(Loss lose) {
    std::lock_guard lock(state_->mutex);
    state_->lose = std::move(lose);
}

MemoryStream::MemoryStream(std::shared_ptr<MemoryStreamHubState> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}

MemoryStream::~MemoryStream() {
    // The process ends: its connections close, with whatever was on them.
    std::lock_guard lock(hub_->mutex);
    StreamRank& me = hub_->ranks[rank_];
    me.connected = false;
    hub_->flight.remove_if([&](const Frame& f) { return f.from == rank_ || f.to == rank_; });
    for (int peer = 0; peer < hub_->world; ++peer)
        if (peer != rank_ && me.touched[peer]) {
            ++hub_->ranks[peer].losses[rank_];
            me.touched[peer] = false;
            hub_->ranks[peer].touched[rank_] = false;
        }
    hub_->clock->notify_all(hub_->changed);
}

void MemoryStream::send(int dest, MessageType type, std::span<const std::uint8_t> payload,
                        std::chrono::milliseconds connect_timeout) {
    std::unique_lock lock(hub_->mutex);
    hub_->check_rank(dest, "send to");
    if (dest == rank_) throw Error("memory stream: node " + std::to_string(rank_) + " cannot send to itself");
    const auto deadline = hub_->clock->now() + connect_timeout;
    auto reachable = [&] {
        return hub_->ranks[dest].connected && hub_->ranks[dest].alive && hub_->ranks[rank_].alive;
    };
    while (!reachable()) {
        if (hub_->clock->now() >= deadline)
            throw Error("memory stream: cannot connect to node " + std::to_string(dest) + " within " +
                        std::to_string(connect_timeout.count()) + " ms");
        hub_->clock->wait_until(hub_->changed, lock, std::min(deadline, hub_->clock->now() + std::chrono::milliseconds(20)));
    }
    StreamRank& me = hub_->ranks[rank_];
    me.touched[dest] = hub_->ranks[dest].touched[rank_] = true;
    me.tx += payload.size();
    if (hub_->lose && hub_->lose(rank_, dest, type, payload)) {
        // Reset under the frame: it never arrives, and both ends see their connection close.
        ++me.losses[dest];
        ++hub_->ranks[dest].losses[rank_];
        hub_->clock->notify_all(hub_->changed);
        return;
    }
    const auto now = hub_->clock->now();
    Frame f;
    f.from = rank_;
    f.to = dest;
    f.type = type;
    f.payload.assign(payload.begin(), payload.end());
    f.incarnation = me.incarnation;
    f.seq = hub_->next_seq++;
    f.starts = std::max(now, hub_->free_at[rank_][dest]);
    f.arrives = f.starts;
    if (hub_->rate > 0)
        f.arrives += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(static_cast<double>(payload.size()) / hub_->rate));
    hub_->free_at[rank_][dest] = f.arrives;
    hub_->flight.push_back(std::move(f));
    hub_->clock->notify_all(hub_->changed);
}

std::optional<Message> MemoryStream::receive(std::chrono::milliseconds timeout) {
    std::unique_lock lock(hub_->mutex);
    const auto deadline = hub_->clock->now() + timeout;
    for (;;) {
        const auto now = hub_->clock->now();
        auto next = hub_->flight.end();
        Clock::time_point soonest = deadline;
        for (auto it = hub_->flight.begin(); it != hub_->flight.end(); ++it) {
            if (it->to != rank_ || !hub_->flowing(*it)) continue;
            if (it->arrives <= now) {
                if (next == hub_->flight.end() || it->seq < next->seq) next = it;
            } else {
                soonest = std::min(soonest, it->arrives);
            }
        }
        if (next != hub_->flight.end()) {
            Frame f = std::move(*next);
            hub_->flight.erase(next);
            hub_->ranks[rank_].rx += f.payload.size();
            hub_->ranks[rank_].progress[f.from] = now;
            hub_->ranks[f.from].progress[rank_] = now;
            return Message{f.from, f.type, f.seq, std::move(f.payload), f.incarnation};
        }
        if (now >= deadline) return std::nullopt;
        hub_->clock->wait_until(hub_->changed, lock, std::min(soonest, deadline));
    }
}

std::optional<Clock::time_point> MemoryStream::last_progress(int rank) const {
    std::lock_guard lock(hub_->mutex);
    if (rank < 0 || rank >= hub_->world) return std::nullopt;
    const auto now = hub_->clock->now();
    for (const auto& f : hub_->flight)
        if (((f.from == rank_ && f.to == rank) || (f.from == rank && f.to == rank_)) && hub_->flowing(f) && f.starts <= now)
            return now;  // bytes of it are moving
    return hub_->ranks[rank_].progress[rank];
}

std::uint64_t MemoryStream::connections_lost(int rank) const {
    std::lock_guard lock(hub_->mutex);
    if (rank < 0 || rank >= hub_->world) return 0;
    return hub_->ranks[rank_].losses[rank];
}

std::uint64_t MemoryStream::bytes_tx() const {
    std::lock_guard lock(hub_->mutex);
    return hub_->ranks[rank_].tx;
}

std::uint64_t MemoryStream::bytes_rx() const {
    std::lock_guard lock(hub_->mutex);
    return hub_->ranks[rank_].rx;
}

}  // namespace thresher::dist
