// What the node protocol sends as streams: large messages (averaging sums and results, join
// requests and answers) between the ranks of a run, framed, authenticated and ordered per
// connection, delivered whole. Two implementations: BulkChannel (bulk_channel.h, TCP between
// processes) and MemoryStream (memory_stream.h, ranks as threads of one test process, with
// seeded faults). The datagram side is Transport (transport.h); NodeLink speaks to both.
//
// Guarantees the protocol builds on: a frame written on a connection that stays open arrives
// (TCP's promise), so a sender resends only when connections_lost() says the connection it used
// has closed; bytes moving either way on a connection are a sign of life of its peer
// (last_progress), however long a large frame takes over a slow link.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>

#include "dist/net/transport.h"

namespace thresher::dist {

class Stream {
public:
    virtual ~Stream() = default;

    // The model's parameter count, which bounds every payload that carries parameters. Until it is
    // set, such frames wait unread; join requests pass.
    virtual void set_param_count(std::size_t params) = 0;
    // Blocks until the frame is handed to the connection to `dest` (connecting first, retrying for
    // up to `connect_timeout`). Throws thresher::Error naming the node when it cannot connect or
    // the write stops moving.
    virtual void send(int dest, MessageType type, std::span<const std::uint8_t> payload,
                      std::chrono::milliseconds connect_timeout = std::chrono::seconds(10)) = 0;
    // The next whole frame to arrive; Message::incarnation is the sender's process.
    virtual std::optional<Message> receive(std::chrono::milliseconds timeout) = 0;
    // When bytes last moved on a connection with `rank`, either way (nullopt: never).
    virtual std::optional<std::chrono::steady_clock::time_point> last_progress(int rank) const = 0;
    // How many connections with `rank` have closed since this process started.
    virtual std::uint64_t connections_lost(int rank) const = 0;
    virtual std::uint64_t bytes_tx() const = 0;
    virtual std::uint64_t bytes_rx() const = 0;
};

}  // namespace thresher::dist
