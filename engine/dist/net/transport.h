// What the distributed training masters see of the network: numbered ranks that send each other
// typed byte messages. Delivery is reliable and exactly-once (lost datagrams are retransmitted,
// duplicates and replays dropped) and authenticated, but NOT ordered: two messages from the same
// sender may arrive in either order, so protocols built on this carry their own step numbers.
//
// Two implementations: UdpTransport (udp_transport.h) between processes, and MemoryTransport
// (memory_transport.h) for ranks as threads of one test process, with injectable faults.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "dist/net/datagram.h"

namespace thresher::dist {

// The kinds of message the masters exchange. The UDP implementation also sends acknowledgements,
// under a type value outside this list that never reaches the caller.
enum class MessageType : std::uint8_t {
    Update = 1,         // a worker's encoded gradient update (gradient sharing)
    Params = 2,         // current parameters
    ParamsRequest = 3,  // a late joiner asks for Params
    Average = 4,        // parameters sent in for averaging
    AverageResult = 5,  // the averaged parameters
    Heartbeat = 6,
    Evaluation = 7,     // evaluation counts to merge on the controller
    Control = 8,        // start/stop/epoch control from the controller
    Predictions = 9,    // a node's share of a distributed `predict`, for the controller
};

// True for the values listed above: anything else on the wire is not a message type.
constexpr bool is_message_type(std::uint8_t value) { return value >= 1 && value <= 9; }

struct Message {
    int sender = -1;
    MessageType type = MessageType::Heartbeat;
    std::uint64_t id = 0;  // per (sender, receiver): 1, 2, 3, ... in the sender's send order
    std::vector<std::uint8_t> payload;
    // Which process of rank `sender` sent it (UdpTransport: see datagram.h); ids count from 1
    // again for each new incarnation of either side. 0 where the transport has none.
    std::uint64_t incarnation = 0;
};

struct TransportStats {
    std::uint64_t bytes_tx = 0;      // datagram bytes sent, retransmissions and acks included
    std::uint64_t bytes_rx = 0;      // datagram bytes received, dropped ones included
    std::uint64_t datagrams_tx = 0;
    std::uint64_t datagrams_rx = 0;
    std::uint64_t retransmitted = 0; // datagrams sent again because no ack came in time
    std::uint64_t duplicates = 0;    // authentic copies of chunks still inside the dedup window
    std::map<DropReason, std::uint64_t> dropped;

    std::uint64_t dropped_total() const {
        std::uint64_t total = 0;
        for (const auto& [reason, count] : dropped) total += count;
        return total;
    }
};

class Transport {
public:
    virtual ~Transport() = default;

    virtual int rank() const = 0;
    virtual int world() const = 0;

    // Queues `payload` for `dest` and returns at once. The message is delivered exactly once while
    // the peer is alive. Sending to our own rank delivers locally. Throws thresher::Error for a
    // rank outside [0, world) or a payload larger than the implementation can carry.
    virtual void send(int dest, MessageType type, std::span<const std::uint8_t> payload) = 0;
    // send() to every rank but our own.
    virtual void broadcast(MessageType type, std::span<const std::uint8_t> payload) = 0;
    // The next delivered message, or nullopt when none arrives within `timeout`.
    virtual std::optional<Message> receive(std::chrono::milliseconds timeout) = 0;
    // Waits until everything sent so far is acknowledged; false when `timeout` passes first.
    virtual bool flush(std::chrono::milliseconds timeout) = 0;
    virtual TransportStats stats() const = 0;
    // Peers whose messages have stayed unacknowledged past the give-up deadline (10 s unless
    // configured): most likely dead. A peer that acknowledges again leaves the list.
    virtual std::vector<int> unreachable_peers() const { return {}; }
    // When an authentic datagram of `rank`'s current process last arrived (its acknowledgements and
    // greetings included); nullopt when none has, or the transport does not tell. A peer listed
    // unreachable whose datagrams still arrive is alive, only not hearing us (its path to us
    // works, ours to it is congested or cut): the node link weighs both (liveness from progress).
    virtual std::optional<std::chrono::steady_clock::time_point> last_heard(int /*rank*/) const { return std::nullopt; }
    // This process's incarnation, and the newest one heard from `rank` (0: none heard yet). A
    // transport without restarts (in memory) has none: both 0.
    virtual std::uint64_t incarnation() const { return 0; }
    virtual std::uint64_t peer_incarnation(int /*rank*/) const { return 0; }
};

}  // namespace thresher::dist
