// Ranks as threads of one process (STYLE item 8): a MemoryHub connects `world` MemoryTransports
// that hand messages to each other through memory. Tests of the training masters run on it,
// optionally with the faults a real network has, injected from a seeded RNG:
//   drop:      an attempt is lost, and the "sender" retries after retransmit_after (counted in
//              stats().retransmitted), so the message arrives late but still arrives;
//   duplicate: a second copy arrives later and must be deduplicated (stats().duplicates);
//   reorder:   a message is held back by up to max_delay, so later ones overtake it.
// Whatever the faults, every message is delivered exactly once, as UdpTransport promises.
// set_alive(rank, false) cuts a rank off (a partition or a hung process): nothing flows to or
// from it, its peers list it in unreachable_peers() after give_up_after, and held messages flow
// again once it is set alive. set_loss() loses chosen messages for good.
// Processes: each connect() is a process with incarnation 1, 2, ... of its rank. Destroying a
// rank's transport ends that process (what is sent to it is lost; its peers give up on it after
// give_up_after; cut it off first with set_alive(rank, false) for a crash);
// connecting the rank again is its restart: a newer incarnation, as UdpTransport reports a
// restarted peer, fresh numbering both ways, and what was on its way to the old process lost.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "core/clock.h"
#include "dist/net/transport.h"

namespace thresher::dist {

struct MemoryFaults {
    double drop = 0;       // probability that one delivery attempt is lost
    double duplicate = 0;  // probability that a message arrives twice
    double reorder = 0;    // probability that a message is delayed by up to max_delay
    std::chrono::milliseconds max_delay{5};
    std::chrono::milliseconds retransmit_after{2};
    std::uint64_t seed = 1;
};

struct MemoryHubState;  // shared by the hub and its transports, so either may go first
class MemoryTransport;

class MemoryHub {
public:
    // `clock`: arrival times, delays, give-up times and every wait (a VirtualClock in protocol tests).
    explicit MemoryHub(int world, MemoryFaults faults = {},
                       std::chrono::milliseconds give_up_after = std::chrono::seconds(10), Clock& clock = real_clock());
    int world() const;
    // The transport of `rank`; each rank can be connected once. Messages sent to a rank before it
    // connects wait for it.
    std::unique_ptr<MemoryTransport> connect(int rank);
    void set_alive(int rank, bool alive);
    // Messages for which `lose` (called under the hub's lock: keep it short) says true are lost
    // for good, as a frame is when its TCP connection resets under it: the protocol above must
    // notice and recover. Empty: none.
    using Loss = std::function<bool(int from, int to, MessageType, std::span<const std::uint8_t> payload)>;
    void set_loss(Loss lose);
    // How long each message from `from` to `to` occupies their link (zero: none), after the
    // previous one on it: a slow link that spreads a burst of messages over time, on the hub's
    // clock, without holding up the sender. Called under the hub's lock. Empty: none.
    using LinkTime = std::function<Clock::duration(int from, int to, MessageType)>;
    void set_link_time(LinkTime time);

private:
    std::shared_ptr<MemoryHubState> state_;
};

class MemoryTransport : public Transport {
public:
    MemoryTransport(std::shared_ptr<MemoryHubState> hub, int rank);  // use MemoryHub::connect
    ~MemoryTransport() override;
    int rank() const override { return rank_; }
    int world() const override;
    void send(int dest, MessageType type, std::span<const std::uint8_t> payload) override;
    void broadcast(MessageType type, std::span<const std::uint8_t> payload) override;
    std::optional<Message> receive(std::chrono::milliseconds timeout) override;
    bool flush(std::chrono::milliseconds timeout) override;
    TransportStats stats() const override;
    std::vector<int> unreachable_peers() const override;
    std::uint64_t incarnation() const override;
    std::uint64_t peer_incarnation(int rank) const override;

private:
    std::shared_ptr<MemoryHubState> hub_;
    int rank_;
};

}  // namespace thresher::dist
