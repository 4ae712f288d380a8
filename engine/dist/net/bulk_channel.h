// The TCP side of a node's port (DESIGN.md: "the same number over TCP for control and bulk
// transfers"): large messages between the controller (node 0) and the other nodes, such as
// averaging rounds of tens of megabytes, which TCP's congestion control carries at link speed
// where chunked, individually acknowledged datagrams cannot. Every node listens on its port; a
// node connects to another on its first send to it (a tree's averaging rounds go between any two
// nodes), and either side's connection carries frames both ways.
//
// Frame: magic 'THRB' u32, version u8 (1), type u8, reserved u16 (0), run id u64, sender u32,
// length u64, then the payload and HMAC-SHA256 (run secret) over everything before it. A frame
// that fails any check closes its connection and is counted; nothing from it is delivered.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "dist/net/secret.h"
#include "dist/net/transport.h"
#include "dist/net/udp_transport.h"

namespace thresher::dist {

class BulkChannel {
public:
    // Binds bind_address:port (this node's --nodes entry's port) at once; a taken port is a
    // thresher::Error naming it.
    BulkChannel(int rank, std::vector<UdpEndpoint> peers, const std::string& bind_address, std::uint64_t run_id,
                Secret secret);
    ~BulkChannel();
    BulkChannel(const BulkChannel&) = delete;
    BulkChannel& operator=(const BulkChannel&) = delete;

    // Blocks until the frame is written; connects first if no connection to `dest` is open
    // (retrying for up to `connect_timeout`).
    void send(int dest, MessageType type, std::span<const std::uint8_t> payload,
              std::chrono::milliseconds connect_timeout = std::chrono::seconds(10));
    std::optional<Message> receive(std::chrono::milliseconds timeout);

    std::uint64_t bytes_tx() const;
    std::uint64_t bytes_rx() const;
    std::uint64_t rejected() const;  // frames (and their connections) refused
    std::uint16_t local_port() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace thresher::dist
