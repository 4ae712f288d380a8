// Link emulation on a node's own egress, no root needed (issue 14): "these 4 nodes behind
// 1 Gbit with 2 ms of delay" on one laptop. Every datagram the UDP transport sends and every
// frame the TCP bulk channel writes passes one LinkShaper per process before it reaches the
// socket, so both share the node's emulated link, as they share a real NIC.
//
// The model, per packet of b bytes handed over at time t (rate R bit/s, delay D):
//   departs = max(t, departs of the previous packet) + 8·b / R   (a token bucket one packet deep:
//             the link serialises packets back to back, never faster than R)
//   arrives = departs + D                                         (the delay line)
// and the packet is written to the real socket at `arrives`. Example: 1 Gbit, 2 ms; three
// 1200-byte datagrams handed over together arrive 2.0096, 2.0192 and 2.0288 ms later. A TCP
// frame travels in pieces of about 1 ms of the link (1448 bytes to 256 KiB), each written when
// it would have arrived, so the receiver sees a large frame's bytes come in as they would over
// the link (its liveness and stall deadlines depend on that); pieces are handed over only while
// the link's backlog is short (backlog(), bulk_channel.cpp), so datagrams share the link with a
// transfer instead of queueing behind all of it. A 10 MB frame at 1 Gbit, 2 ms: its last byte
// arrives about 82 ms later.
//
// Loss (UDP datagrams only, seeded): each datagram is dropped with probability `loss`; TCP
// retransmits below us, so its frames are never dropped. A datagram that would wait more than
// `max_queue` for the link (tc tbf's `latency`) is dropped too, like a full router queue;
// without that bound a slow link would queue without limit and the UDP transport's
// retransmissions would pile on. Lost datagrams are the transport's to retransmit: nothing is
// lost to the training master.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>

namespace thresher::dist {

struct LinkSpec {
    double rate_bits_per_s = 0;              // 0: unlimited
    std::chrono::microseconds delay{0};      // one way
    double loss = 0;                         // UDP datagram loss probability, [0, 1)
    std::chrono::milliseconds max_queue{50}; // a UDP datagram queued longer is dropped
    std::uint64_t seed = 1;                  // loss draws

    bool active() const { return rate_bits_per_s > 0 || delay.count() > 0 || loss > 0; }
    // "1 Gbit/s, 2 ms, 1% loss" (for logs and the run_started event).
    std::string describe() const;
};

// Typed once where they enter (--link-rate/--link-delay/--link-loss). Throw thresher::ConfigError
// naming the option and the value.
//   rate:  "1gbit", "100mbit", "250kbit", "1.5gbit", "8000bit" or a plain number of bit/s; "0" or
//          "none" for unlimited. Units are tc's: bit, kbit, mbit, gbit (×1000), case-insensitive.
//   delay: "2ms", "500us", "0.01s", or a plain number of milliseconds; at most 10 s.
//   loss:  a probability "0.01" or a percentage "1%"; below 1.
double parse_link_rate(const std::string& text);
std::chrono::microseconds parse_link_delay(const std::string& text);
double parse_link_loss(const std::string& text);

// The node's emulated link: thread-safe, shared by the UDP transport and the bulk channel.
class LinkShaper {
public:
    using Clock = std::chrono::steady_clock;
    explicit LinkShaper(LinkSpec spec);

    // When a packet of `bytes` handed over now should be written to the socket; nullopt when a
    // lossy (UDP) packet is lost instead (drawn, or its queue wait above max_queue). A lost
    // packet takes no room on the link. `now`: when it is handed over (tests pass their own).
    std::optional<Clock::time_point> admit(std::size_t bytes, bool lossy, Clock::time_point now = Clock::now());

    // How long a packet handed over at `now` would wait for the link (0 when it is idle). The bulk
    // channel hands its frames over in pieces only while this is short, as TCP's congestion
    // window keeps a bottleneck's queue short: datagrams then wait behind a few pieces of a large
    // transfer, not behind all of it (a 7 MB frame at 5 Mbit/s held every datagram back for 11 s,
    // and the peers took each other for dead).
    Clock::duration backlog(Clock::time_point now = Clock::now()) const;

    const LinkSpec& spec() const { return spec_; }
    std::uint64_t lost() const;        // UDP datagrams dropped by the emulated link, both reasons
    std::uint64_t bytes_sent() const;  // bytes admitted

private:
    const LinkSpec spec_;
    mutable std::mutex mutex_;
    Clock::time_point departs_{};
    std::mt19937_64 rng_;
    std::uint64_t lost_ = 0;
    std::uint64_t bytes_ = 0;
};

}  // namespace thresher::dist
