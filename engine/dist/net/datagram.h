// The wire format of one UDP datagram of a distributed run, and the checks a received one must
// pass before any of its fields is believed. Layout (network byte order, 50-byte header):
//
//   offset  size  field
//        0     4  magic 'THRS' (0x54485253)
//        4     1  version (2; version 1 had no incarnations and is refused)
//        5     1  type (transport.h MessageType, or the UDP transport's internal Ack)
//        6     1  flags (none defined in version 1: must be 0)
//        7     1  reserved (must be 0)
//        8     8  run_id: datagrams of another run (or a stale one) are dropped
//       16     4  sender rank
//       20     8  message_id: per (sender incarnation, destination incarnation), 1, 2, 3, ...
//       28     2  chunk_index  (< chunk_count)
//       30     2  chunk_count  (>= 1)
//       32     2  payload_length
//       34     8  sender_incarnation: which process of that rank sent it (never 0)
//       42     8  dest_incarnation: which process of the destination rank it is for (0: the
//                 sender does not know yet, allowed only in the transport's hellos)
//       50     n  payload
//     50+n    32  HMAC-SHA256(run secret, bytes [0, 50+n))
//
// Incarnations make a restarted node a new peer rather than a replayer: each engine process
// picks one at start (incarnation.h: its start time in ns, kept above the host's previous one),
// message ids count from 1 per pair of incarnations, and a receiver refuses datagrams of an
// older incarnation of a sender or for an incarnation other than its own (udp_transport.cpp).
//
// A whole datagram is at most 1200 bytes, below the path MTU of any network we run on (IPv6
// guarantees 1280), so the network never fragments it: 1200 - 50 - 32 = 1118 payload bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <optional>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "dist/net/secret.h"

namespace thresher::dist {

inline constexpr std::uint32_t kDatagramMagic = 0x54485253;  // "THRS"
inline constexpr std::uint8_t kDatagramVersion = 2;
inline constexpr std::size_t kHeaderBytes = 50;
inline constexpr std::size_t kMacBytes = 32;
inline constexpr std::size_t kMaxDatagramBytes = 1200;
inline constexpr std::size_t kMaxPayloadBytes = kMaxDatagramBytes - kHeaderBytes - kMacBytes;  // 1118

// Why a received datagram was not used. Every drop is counted under one of these
// (TransportStats::dropped), so an operator can tell loss from attack from misconfiguration.
enum class DropReason : std::uint8_t {
    TooShort,       // shorter than header + MAC
    BadMagic,       // not a Thresher datagram at all
    BadVersion,     // another protocol version, flags/reserved bits this version does not know,
                    // or an authenticated message type this version does not know
    WrongRun,       // a Thresher datagram of another run (or an old one still in flight)
    BadLength,      // payload_length disagrees with the datagram size, or a malformed payload
    BadChunk,       // chunk_count 0, chunk_index >= chunk_count, or chunks of one message disagree
    BadMac,         // HMAC does not verify: wrong secret or altered bytes
    Replay,         // an authentic copy of a message already delivered (below the dedup window),
                    // or from an older incarnation of its sender, or for another incarnation of us
    UnknownSender,  // sender rank out of range, our own rank, or not from that rank's address
    Oversize,       // longer than kMaxDatagramBytes, or over the reassembly memory cap
};

std::string_view to_string(DropReason);

struct DatagramHeader {
    std::uint8_t type = 0;
    std::uint8_t flags = 0;
    std::uint64_t run_id = 0;
    std::uint32_t sender = 0;
    std::uint64_t message_id = 0;
    std::uint16_t chunk_index = 0;
    std::uint16_t chunk_count = 1;
    std::uint64_t sender_incarnation = 0;
    std::uint64_t dest_incarnation = 0;
    // magic, version, reserved and payload_length are implied: seal() writes them, open() checks them.
};

struct Datagram {
    DatagramHeader header;
    std::vector<std::uint8_t> payload;
};

// Builds a sealed datagram. Throws thresher::Error when the payload is over kMaxPayloadBytes or the
// header is inconsistent (chunk_count 0, chunk_index >= chunk_count): those are caller bugs.
std::vector<std::uint8_t> seal(const DatagramHeader& header, std::span<const std::uint8_t> payload,
                               const Secret& secret);

// Checks a received datagram. Hostile input is expected: size, magic, version, flags, run id,
// chunk fields and length are checked first (cheap, and before the MAC so a flood of junk costs
// little), then the MAC in constant time. Returns the datagram, or nullopt with `why` set. Never
// throws on bad input and never reads outside `bytes`.
std::optional<Datagram> open(std::span<const std::uint8_t> bytes, const Secret& secret,
                             std::uint64_t run_id, DropReason& why);

// Which message ids of one sender have been delivered, in bounded memory when ids arrive roughly
// in order. Ids count up from 1 per (sender, destination). Everything <= floor() is done; done
// ids above the floor sit in a set until the gap below them fills.
//   mark_done(1), mark_done(3): floor 1, above {3};  mark_done(2): floor 3, above {}.
class IdWindow {
public:
    enum class State { New, Done, BelowFloor };
    State state(std::uint64_t id) const;
    void mark_done(std::uint64_t id);
    // Treats every id up to `id` as done (ids that will never come, such as those sent before a
    // peer was a destination).
    void advance_floor(std::uint64_t id);
    std::uint64_t floor() const { return floor_; }
    std::size_t above_floor() const { return above_.size(); }
    // The lowest id done above the floor (the end of the first hole); nullopt without a hole.
    std::optional<std::uint64_t> lowest_above() const {
        return above_.empty() ? std::nullopt : std::optional<std::uint64_t>(*above_.begin());
    }

private:
    std::uint64_t floor_ = 0;
    std::set<std::uint64_t> above_;
};

}  // namespace thresher::dist
