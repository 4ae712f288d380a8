// The stream twin (stream.h) for ranks as threads of one test process: what BulkChannel does over
// TCP, in memory, so the in-process protocol tests run averaging rounds and joins over streams as
// the engine does. A MemoryStreamHub connects `world` MemoryStreams.
//
// The model: a frame from a to b takes bytes / rate to arrive (instantly with rate 0), after
// every earlier frame from a to b (one connection per pair, ordered); it is delivered whole.
// While it travels, both ends see progress with each other (last_progress = now), as a TCP
// transfer moves bytes all along. send() returns once the frame is handed over, like a write
// into a socket's buffer.
// Faults, as the real network has them:
//   set_loss(lose)      a frame `lose` picks dies with its connection (a reset): it never arrives,
//                       and both ends count a lost connection, so the protocol resends;
//   set_alive(r, false) a cut-off host (partition, hung machine): nothing moves to or from r, its
//                       frames in flight stall (no progress) and arrive once it is alive again;
//                       a send to it waits up to its connect timeout, then throws;
//   a process exit      destroying a rank's MemoryStream ends its connections: frames from and to
//                       it are lost, its peers count a lost connection; connect() again is its
//                       restart (pass the new incarnation).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "core/clock.h"
#include "dist/net/stream.h"

namespace thresher::dist {

struct MemoryStreamHubState;

class MemoryStream;

class MemoryStreamHub {
public:
    // `bytes_per_second`: each pair's link rate (0: frames arrive at once). `clock`: arrival times,
    // progress and every wait (a VirtualClock in protocol tests).
    explicit MemoryStreamHub(int world, double bytes_per_second = 0, Clock& clock = real_clock());
    // The stream of a process of `rank` whose incarnation is `incarnation` (the transport's).
    std::unique_ptr<MemoryStream> connect(int rank, std::uint64_t incarnation);
    void set_alive(int rank, bool alive);
    // Called under the hub's lock (keep it short); true loses the frame with its connection.
    using Loss = std::function<bool(int from, int to, MessageType, std::span<const std::uint8_t> payload)>;
    void set_loss(Loss lose);

private:
    std::shared_ptr<MemoryStreamHubState> state_;
};

class MemoryStream final : public Stream {
public:
    MemoryStream(std::shared_ptr<MemoryStreamHubState> hub, int rank);  // use MemoryStreamHub::connect
    ~MemoryStream() override;
    MemoryStream(const MemoryStream&) = delete;
    MemoryStream& operator=(const MemoryStream&) = delete;

    void set_param_count(std::size_t) override {}  // nothing unread waits on it in memory
    void send(int dest, MessageType type, std::span<const std::uint8_t> payload,
              std::chrono::milliseconds connect_timeout = std::chrono::seconds(10)) override;
    std::optional<Message> receive(std::chrono::milliseconds timeout) override;
    std::optional<std::chrono::steady_clock::time_point> last_progress(int rank) const override;
    std::uint64_t connections_lost(int rank) const override;
    std::uint64_t bytes_tx() const override;
    std::uint64_t bytes_rx() const override;

private:
    std::shared_ptr<MemoryStreamHubState> hub_;
    int rank_;
};

}  // namespace thresher::dist
