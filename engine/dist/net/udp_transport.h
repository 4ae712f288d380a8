// Transport between engine processes over UDP (Boost.Asio), one socket per node. What it adds to
// UDP: whole messages of up to ~73 MB (chunked into datagrams of at most 1200 bytes and
// reassembled), delivery despite loss (each chunk is acknowledged; unacknowledged chunks are sent
// again after 30 ms, backing off to 500 ms), exactly once despite duplication and replay (a
// per-sender window of delivered message ids), and authenticity (every datagram carries an HMAC
// under the run secret, and must come from the address configured for the rank it claims).
//
// Threads: one io_context runs on a thread of its own and owns the socket, timers and protocol
// state; send() hands messages to it and returns at once, receive() takes delivered messages
// from a queue. Call flush() before destroying a transport: unacknowledged messages die with it.
//
// A peer that stops acknowledging is listed by unreachable_peers() after give_up_after; messages
// to it stay queued and one chunk a tick probes it, so it is delivered to if it comes back. What
// to do about a dead peer (stop sending to it, end the run) is the training master's decision.
// Messages to one peer leave in send order through one window, so a large message delays the
// small ones queued behind it to that peer (bulk data belongs on TCP, see DESIGN.md).
// Restarts: every UdpTransport is a new incarnation of its rank (datagram.h). Peers greet each
// other with hellos until each knows the other's incarnation; data waits for that. When a peer
// shows a newer incarnation (its process was restarted), everything about the old one is
// forgotten: its half-received messages, its id window, and our queued and unacknowledged
// messages to it (they were for a process that is gone; the training master decides what the
// new one needs). Ids to the new incarnation count from 1 again. Datagrams of an older
// incarnation, or addressed to an incarnation of ours other than this one, are replays: dropped
// and counted under DropReason::Replay.
//
// Example, node 1 of three:
//   UdpTransport t(1, {{"10.0.0.1", 40123}, {"10.0.0.2", 40123}, {"10.0.0.3", 40123}},
//                  choose_bind_address(bind, mask, std::getenv("THRESHER_IP")), run_id, secret);
//   t.send(0, MessageType::Update, bytes);
//   while (auto m = t.receive(std::chrono::milliseconds(100))) handle(*m);
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dist/net/link_emulator.h"
#include "dist/net/secret.h"
#include "dist/net/transport.h"

namespace thresher::dist {

struct UdpEndpoint {
    std::string host;  // name or address; resolved once, at construction
    std::uint16_t port = 0;
};

struct UdpOptions {
    std::chrono::milliseconds retransmit_after{30};       // first retransmission of a chunk
    std::chrono::milliseconds max_retransmit_after{500};  // backoff doubles up to this
    // Then the peer is listed unreachable. Shorter than the node link's silence (10 s) by more
    // than its heartbeat interval (1 s): this count starts at the first datagram left unanswered,
    // which comes up to one heartbeat after a peer's death, so the link's verdict (unreachable AND
    // silent for 10 s) falls 10 s after the last byte of a dead peer, not 11.
    std::chrono::milliseconds give_up_after{9000};
    std::size_t max_datagram = kMaxDatagramBytes;         // smaller only; the wire format caps it
    // Reassembly memory, all senders together; a message reserves chunk_count x 1118 bytes at its
    // first chunk. One needing more than this is never delivered (its sender lists us unreachable),
    // so keep it above max_message_bytes() (~73 MB) unless that is the point.
    std::size_t max_partial_bytes = std::size_t{256} << 20;
    std::size_t max_window = 512;  // ceiling of the chunks in flight per peer (the window adapts below it)
    // Our incarnation; by default new_incarnation() (incarnation.h: the start time in ns, but
    // never below the host's last one + 1), so a restarted process of the same rank outranks its
    // predecessor even after the clock stepped back. Tests set it to play old and new ones.
    std::optional<std::uint64_t> incarnation;
    // How often a peer whose incarnation we do not know yet is greeted (backing off to 1 s).
    std::chrono::milliseconds hello_after{20};
    // Port to bind; by default the port of our own entry in `peers`. A loopback proxy in the tests
    // binds elsewhere and stands in at the configured address.
    std::optional<std::uint16_t> bind_port;
    // The node's emulated link (link_emulator.h, --link-rate/--link-delay/--link-loss), shared
    // with its bulk channel; null: datagrams go straight to the socket.
    std::shared_ptr<LinkShaper> link;
};

class UdpTransport : public Transport {
public:
    // Binds `bind_address`:port and starts the network thread. Throws thresher::Error naming the
    // address and port when the port is taken or the address is not local, and naming the node
    // when a peer's host does not resolve.
    UdpTransport(int rank, std::vector<UdpEndpoint> peers, const std::string& bind_address, std::uint64_t run_id,
                 Secret secret, UdpOptions options = {});
    ~UdpTransport() override;
    UdpTransport(const UdpTransport&) = delete;
    UdpTransport& operator=(const UdpTransport&) = delete;

    int rank() const override;
    int world() const override;
    void send(int dest, MessageType type, std::span<const std::uint8_t> payload) override;
    void broadcast(MessageType type, std::span<const std::uint8_t> payload) override;
    std::optional<Message> receive(std::chrono::milliseconds timeout) override;
    bool flush(std::chrono::milliseconds timeout) override;
    TransportStats stats() const override;
    std::vector<int> unreachable_peers() const override;
    std::optional<std::chrono::steady_clock::time_point> last_heard(int rank) const override;
    std::uint64_t incarnation() const override;
    std::uint64_t peer_incarnation(int rank) const override;

    std::uint16_t local_port() const;
    // The largest payload send() accepts: 65535 chunks of (max_datagram - 82) bytes.
    std::size_t max_message_bytes() const;

private:
    struct Impl;  // keeps Boost.Asio out of this header
    std::unique_ptr<Impl> impl_;
};

// The address to bind, from the user's choices in order: `bind` (--bind) as given; else the
// local interface address inside `network_mask_cidr` (--network-mask, e.g. "10.1.0.0/16"; IPv4
// or IPv6); else `thresher_ip_env` (the THRESHER_IP variable, passed in so tests can set it);
// else "0.0.0.0". Throws thresher::Error when a value is not an address or no interface matches
// the mask, listing the interfaces it saw.
std::string choose_bind_address(const std::string& bind, const std::string& network_mask_cidr,
                                const char* thresher_ip_env);

}  // namespace thresher::dist
