// The TCP side of a node's port (DESIGN.md: "the same number over TCP for control and bulk
// transfers"): large messages between the nodes, such as averaging rounds of tens of megabytes,
// which TCP's congestion control carries at link speed where chunked, individually acknowledged
// datagrams cannot. Every node listens on its port; a node connects to another on its first send
// to it, and either side's connection carries frames both ways. Wire formats: engine/dist/README.md.
//
// What a peer must do before anything of it is believed or stored:
//   - come from an address of a node of the run (its --nodes entry, resolved once);
//   - finish the handshake within `handshake_timeout`: a hello, then answers carrying a fresh
//     random nonce from each side, the ranks and both processes' incarnations under an HMAC with
//     the run secret. Until then it holds one fixed 104-byte buffer, and at most
//     `max_unidentified` such connections exist (a new one sheds the oldest);
//   - and for each frame: a header MAC'd with the connection's own key (derived from both nonces:
//     a frame recorded on another connection, or in an earlier run with the same secret, fails
//     it), carrying the next sequence number of that direction (a replayed or reordered frame
//     fails), and a length within its type's limit (from the parameter count). The payload is read
//     in pieces as it comes and delivered only when its MAC over header and payload verifies.
// A peer's connection is replaced only by a newer process of it (a higher incarnation, proven in
// the handshake); one of an older process is refused. Any failed check closes the connection and
// is counted in rejected().
//
// Threads: one Asio thread does all socket work (no thread per connection); send() blocks its
// caller until the frame is written or its deadline passes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dist/net/secret.h"
#include "dist/net/stream.h"
#include "dist/net/transport.h"
#include "dist/net/udp_transport.h"

namespace thresher::dist {

struct BulkOptions {
    std::uint64_t incarnation = 1;  // this process (the UDP transport's), proven to peers in the handshake
    std::chrono::milliseconds handshake_timeout{5000};   // connect + handshake, either side
    std::size_t max_unidentified = 16;                   // connections not through the handshake yet
    std::chrono::milliseconds stall_timeout{30000};      // inside a frame without a byte arriving
    // A write during which no byte of its connection goes out for this long: the peer is not
    // reading; the connection is closed and send() throws naming it. However large the frame, a
    // write that keeps moving is never cut (its time follows the link).
    std::chrono::milliseconds write_timeout{30000};
    // The node's emulated link (link_emulator.h), shared with its UDP transport: frames go over
    // it in pieces, each written when it would arrive. Null: straight to the socket.
    std::shared_ptr<LinkShaper> link;
};

class BulkChannel final : public Stream {
public:
    // Binds bind_address:port (this node's --nodes entry's port) at once; a taken port is a
    // thresher::Error naming it, and so is a node's host that does not resolve.
    BulkChannel(int rank, std::vector<UdpEndpoint> peers, const std::string& bind_address, std::uint64_t run_id,
                Secret secret, BulkOptions options = {});
    ~BulkChannel() override;
    BulkChannel(const BulkChannel&) = delete;
    BulkChannel& operator=(const BulkChannel&) = delete;

    // The model's parameter count, which bounds every payload that carries parameters. Until it is
    // set, such frames wait (unread) on their connection; join requests pass.
    void set_param_count(std::size_t params) override;

    // Blocks until the frame is written; connects first if no connection to `dest` is open
    // (retrying for up to `connect_timeout`). Throws thresher::Error naming the node when it
    // cannot connect or the write does not finish within its deadline.
    void send(int dest, MessageType type, std::span<const std::uint8_t> payload,
              std::chrono::milliseconds connect_timeout = std::chrono::seconds(10)) override;
    // Message::incarnation is the sender's process, as proven in its connection's handshake.
    std::optional<Message> receive(std::chrono::milliseconds timeout) override;

    // When bytes last moved on an authenticated connection with `rank`, either way (nullopt:
    // never): a sign of life while a large frame keeps the link busy and datagrams wait.
    std::optional<std::chrono::steady_clock::time_point> last_progress(int rank) const override;
    // How many authenticated connections with `rank` have closed: a frame sent on one that then
    // closed may be lost, and one sent on a connection that is still open is delivered by TCP.
    std::uint64_t connections_lost(int rank) const override;

    std::uint64_t bytes_tx() const override;
    std::uint64_t bytes_rx() const override;
    std::uint64_t rejected() const;  // connections refused or closed for a failed check
    std::size_t unidentified() const;  // connections now in their handshake
    std::uint16_t local_port() const;

    // The largest payload of `type` accepted for `params` parameters in a run of `nodes` nodes
    // (0: the type never travels over this channel).
    static std::size_t payload_limit(MessageType type, std::size_t params, int nodes);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace thresher::dist
