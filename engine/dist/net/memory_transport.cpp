// MemoryHub and MemoryTransport (see memory_transport.h). One mutex guards the whole hub: this
// is a test harness, and one lock makes every interleaving of the rank threads easy to reason
// about. Arrivals are kept per receiver ordered by arrival time, which is how delay, reordering
// and retransmission are modelled.
#include "dist/net/memory_transport.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>

#include "core/error.h"
#include "core/rng.h"

namespace thresher::dist {

namespace {

struct Envelope {
    int sender;
    MessageType type;
    std::uint64_t id;
    std::shared_ptr<const std::vector<std::uint8_t>> payload;  // one copy shared by a broadcast
    std::uint64_t incarnation = 0;  // the sending process's
};

struct Held {
    Clock::time_point since;
    Envelope envelope;
};

struct RankState {
    explicit RankState(int world) : next_id(world, 0), windows(world), held(world), link_free_at(world) {}
    std::multimap<Clock::time_point, Envelope> arriving;  // equal times keep insertion order
    std::condition_variable wake;
    std::vector<std::uint64_t> next_id;  // last id used, per destination
    std::vector<IdWindow> windows;       // per sender
    std::vector<std::deque<Held>> held;  // per destination, while either end is cut off
    std::vector<Clock::time_point> link_free_at;  // per destination: set_link_time's link is busy until
    Clock::time_point last_arrival{};    // when the last thing this rank sent arrives
    TransportStats stats;
    bool alive = true;
    bool connected = false;
    std::uint64_t incarnation = 0;  // of the process connected now; 1, 2, ... per connect
    std::optional<Clock::time_point> exited;  // its process ended (transport destroyed), not restarted yet
};

}  // namespace

struct MemoryHubState {
    MemoryHubState(int world, MemoryFaults faults, std::chrono::milliseconds give_up, Clock& clock)
        : faults(faults), give_up_after(give_up), clock(&clock), rng(faults.seed) {
        for (int r = 0; r < world; ++r) ranks.push_back(std::make_unique<RankState>(world));
    }

    int world() const { return static_cast<int>(ranks.size()); }

    void check_rank(int r, const char* what) const {
        if (r < 0 || r >= world())
            throw Error(std::string("memory transport: ") + what + " rank " + std::to_string(r) +
                        " is outside [0, " + std::to_string(world()) + ")");
    }

    double uniform() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng); }
    Clock::duration random_delay() {
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(faults.max_delay).count();
        return std::chrono::microseconds(std::uniform_int_distribution<std::int64_t>(0, std::max<std::int64_t>(us, 0))(rng));
    }

    // Puts a message on its way with the configured faults. Caller holds `mutex`.
    void dispatch(int dest, Envelope envelope) {
        RankState& from = *ranks[envelope.sender];
        if (lose && dest != envelope.sender && lose(envelope.sender, dest, envelope.type, *envelope.payload)) return;
        auto at = clock->now();
        if (link_time && dest != envelope.sender) {
            const auto busy = link_time(envelope.sender, dest, envelope.type);
            if (busy > Clock::duration::zero()) {
                auto& free_at = from.link_free_at[dest];
                at = std::max(at, free_at) + busy;
                free_at = at;
            }
        }
        if (dest != envelope.sender) {
            // Bounded: drop < 1 ends the loop quickly; 64 losses in a row would be drop ~ 1.
            for (int attempt = 0; attempt < 64 && uniform() < faults.drop; ++attempt) {
                at += faults.retransmit_after;
                ++from.stats.retransmitted;
                ++from.stats.datagrams_tx;
            }
            if (uniform() < faults.reorder) at += random_delay();
            if (uniform() < faults.duplicate) {
                ranks[dest]->arriving.emplace(at + random_delay(), envelope);
                ++from.stats.datagrams_tx;
                from.stats.bytes_tx += envelope.payload->size();
            }
        }
        from.last_arrival = std::max(from.last_arrival, at);
        ranks[dest]->arriving.emplace(at, std::move(envelope));
        clock->notify_all(ranks[dest]->wake);
    }

    // Releases held messages whose both ends are alive again. Caller holds `mutex`.
    void release_held() {
        for (int s = 0; s < world(); ++s) {
            if (!ranks[s]->alive) continue;
            for (int d = 0; d < world(); ++d) {
                if (!ranks[d]->alive) continue;
                auto& queue = ranks[s]->held[d];
                while (!queue.empty()) {
                    dispatch(d, std::move(queue.front().envelope));
                    queue.pop_front();
                }
            }
            clock->notify_all(ranks[s]->wake);
        }
    }

    MemoryFaults faults;
    MemoryHub::Loss lose;
    MemoryHub::LinkTime link_time;
    std::chrono::milliseconds give_up_after;
    Clock* clock;
    Rng rng;
    std::mutex mutex;
    std::vector<std::unique_ptr<RankState>> ranks;
};

void MemoryHub::set_link_time(LinkTime time) {
    std::lock_guard lock(state_->mutex);
    state_->link_time = std::move(time);
}

void MemoryHub::set_loss(Loss lose) {
    std::lock_guard lock(state_->mutex);
    state_->lose = std::move(lose);
}

MemoryHub::MemoryHub(int world, MemoryFaults faults, std::chrono::milliseconds give_up_after, Clock& clock) {
    if (world < 1) throw Error("memory transport: world must be at least 1, got " + std::to_string(world));
    if (faults.drop < 0 || faults.drop >= 1 || faults.duplicate < 0 || faults.duplicate > 1 ||
        faults.reorder < 0 || faults.reorder > 1)
        throw Error("memory transport: fault probabilities must lie in [0, 1) for drop and [0, 1] otherwise");
    state_ = std::make_shared<MemoryHubState>(world, faults, give_up_after, clock);
}

int MemoryHub::world() const { return state_->world(); }

std::unique_ptr<MemoryTransport> MemoryHub::connect(int rank) {
    std::lock_guard lock(state_->mutex);
    state_->check_rank(rank, "connect:");
    RankState& r = *state_->ranks[rank];
    if (r.connected) throw Error("memory transport: rank " + std::to_string(rank) + " is already connected");
    if (r.incarnation != 0) {
        // A restarted process: nothing of its predecessor's survives -- what was on its way to it
        // is lost, its numbering and everyone's numbering towards it start over (as UdpTransport's
        // per-incarnation windows do), and it is reachable again.
        r.arriving.clear();
        std::fill(r.next_id.begin(), r.next_id.end(), 0);
        std::fill(r.windows.begin(), r.windows.end(), IdWindow{});
        for (auto& queue : r.held) queue.clear();
        r.last_arrival = {};
        r.alive = true;
        for (auto& other : state_->ranks) {
            other->next_id[rank] = 0;
            other->windows[rank] = IdWindow{};
            other->held[rank].clear();
        }
        state_->release_held();
    }
    r.connected = true;
    r.exited.reset();
    ++r.incarnation;
    return std::make_unique<MemoryTransport>(state_, rank);
}

void MemoryHub::set_alive(int rank, bool alive) {
    std::lock_guard lock(state_->mutex);
    state_->check_rank(rank, "set_alive:");
    state_->ranks[rank]->alive = alive;
    if (alive) state_->release_held();
}

MemoryTransport::MemoryTransport(std::shared_ptr<MemoryHubState> hub, int rank) : hub_(std::move(hub)), rank_(rank) {}

MemoryTransport::~MemoryTransport() {
    // The process is gone: what is sent to it is lost, its peers give up on it after
    // give_up_after, and its rank may be connected again (a restart).
    std::lock_guard lock(hub_->mutex);
    hub_->ranks[rank_]->connected = false;
    hub_->ranks[rank_]->exited = hub_->clock->now();
}

std::uint64_t MemoryTransport::incarnation() const {
    std::lock_guard lock(hub_->mutex);
    return hub_->ranks[rank_]->incarnation;
}

std::uint64_t MemoryTransport::peer_incarnation(int rank) const {
    std::lock_guard lock(hub_->mutex);
    hub_->check_rank(rank, "peer_incarnation:");
    return hub_->ranks[rank]->incarnation;
}

int MemoryTransport::world() const { return hub_->world(); }

void MemoryTransport::send(int dest, MessageType type, std::span<const std::uint8_t> payload) {
    auto shared = std::make_shared<const std::vector<std::uint8_t>>(payload.begin(), payload.end());
    std::lock_guard lock(hub_->mutex);
    hub_->check_rank(dest, "send: destination");
    RankState& me = *hub_->ranks[rank_];
    Envelope envelope{rank_, type, ++me.next_id[dest], std::move(shared), me.incarnation};
    ++me.stats.datagrams_tx;
    me.stats.bytes_tx += payload.size();
    if (dest != rank_ && hub_->ranks[dest]->exited) return;  // nobody listens: lost, like a datagram to a closed port
    if (dest != rank_ && (!me.alive || !hub_->ranks[dest]->alive)) {
        me.held[dest].push_back({hub_->clock->now(), std::move(envelope)});
        return;
    }
    hub_->dispatch(dest, std::move(envelope));
}

void MemoryTransport::broadcast(MessageType type, std::span<const std::uint8_t> payload) {
    for (int d = 0; d < world(); ++d)
        if (d != rank_) send(d, type, payload);
}

std::optional<Message> MemoryTransport::receive(std::chrono::milliseconds timeout) {
    const auto deadline = hub_->clock->now() + timeout;
    std::unique_lock lock(hub_->mutex);
    RankState& me = *hub_->ranks[rank_];
    for (;;) {
        auto now = hub_->clock->now();
        auto wake_at = deadline;
        while (me.alive && !me.arriving.empty()) {
            auto first = me.arriving.begin();
            if (first->first > now) {
                wake_at = std::min(wake_at, first->first);
                break;
            }
            Envelope envelope = std::move(first->second);
            me.arriving.erase(first);
            ++me.stats.datagrams_rx;
            me.stats.bytes_rx += envelope.payload->size();
            IdWindow& window = me.windows[envelope.sender];
            switch (window.state(envelope.id)) {
            case IdWindow::State::New: {
                window.mark_done(envelope.id);
                Message m{envelope.sender, envelope.type, envelope.id, *envelope.payload};
                m.incarnation = envelope.incarnation;
                return m;
            }
            case IdWindow::State::Done: ++me.stats.duplicates; break;
            case IdWindow::State::BelowFloor: ++me.stats.dropped[DropReason::Replay]; break;
            }
        }
        if (now >= deadline) return std::nullopt;
        hub_->clock->wait_until(me.wake, lock, wake_at);
    }
}

bool MemoryTransport::flush(std::chrono::milliseconds timeout) {
    const auto deadline = hub_->clock->now() + timeout;
    std::unique_lock lock(hub_->mutex);
    RankState& me = *hub_->ranks[rank_];
    for (;;) {
        const auto now = hub_->clock->now();
        const bool held = std::any_of(me.held.begin(), me.held.end(), [](const auto& q) { return !q.empty(); });
        if (!held && now >= me.last_arrival) return true;
        if (now >= deadline) return false;
        // Held messages wait for set_alive (which notifies); in-flight ones for their arrival time.
        hub_->clock->wait_until(me.wake, lock, held ? deadline : std::min(deadline, me.last_arrival));
    }
}

TransportStats MemoryTransport::stats() const {
    std::lock_guard lock(hub_->mutex);
    return hub_->ranks[rank_]->stats;
}

std::vector<int> MemoryTransport::unreachable_peers() const {
    std::lock_guard lock(hub_->mutex);
    const RankState& me = *hub_->ranks[rank_];
    const auto now = hub_->clock->now();
    std::vector<int> peers;
    for (int d = 0; d < hub_->world(); ++d)
        if ((!me.held[d].empty() && now - me.held[d].front().since >= hub_->give_up_after) ||
            (hub_->ranks[d]->exited && now - *hub_->ranks[d]->exited >= hub_->give_up_after))
            peers.push_back(d);
    return peers;
}

}  // namespace thresher::dist
