// The Control messages of NodeLink (node_link.h): a kind byte, then its fields (layouts in
// engine/dist/README.md, section 3). pack_control() writes them and parse_control() reads them,
// pure, so what a peer sends is unit-tested (test_node_link_control) and fuzzed
// (fuzz_control_payload) without a cluster. A peer holds the run secret, so its messages are
// authentic, but a buggy one must still not make another read out of bounds or keep more than
// kMaxReason bytes of its words. Nothing outside the link reads them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace thresher::dist::node_link_control {

constexpr std::uint8_t kDone = 1;    // u64 messages originated, u64 first sent to the receiver, i32 last epoch evaluated
constexpr std::uint8_t kJoined = 2;  // i32 epoch, i64 iteration, u8 rejoin
constexpr std::uint8_t kStop = 3;    // to a restarted controller: the reason, in words
constexpr std::uint8_t kLeft = 4;    // this node's run was stopped while others train on: not waited for
constexpr std::uint8_t kRoundAck = 5;   // u64 round: a node's averaging sums for that round arrived
constexpr std::uint8_t kResultAsk = 6;  // u64 round: the result of that round never came; send it again
constexpr std::uint8_t kGone = 7;       // the sender declared the receiver gone: the reason, in words
constexpr std::uint8_t kFirst = 8;      // u64: the first of the sender's messages this process of the receiver gets
constexpr std::uint8_t kResultAck = 9;  // u64 round: that round's AverageResult arrived
constexpr std::uint8_t kFinished = 10;  // the sender's part of the run is over and its process ends: its silence is no loss
constexpr std::size_t kMaxReason = 1000;
// A "done" from an engine that did not yet say its last evaluated epoch: every part may come.
constexpr std::int32_t kEveryEpoch = std::numeric_limits<std::int32_t>::max();

// One Control message; only the fields of its kind mean anything.
struct Control {
    std::uint8_t kind = 0;
    // kDone (and kFirst: first alone)
    std::uint64_t originated = 0;  // messages the sender originated
    std::uint64_t first = 1;       // the first of them the receiver was a destination of (numbers start at 1)
    std::int32_t evaluated = kEveryEpoch;  // the last epoch it sent its evaluation part for
    // kJoined
    std::int32_t epoch = 0;
    std::int64_t iteration = 0;
    bool rejoin = false;
    // kRoundAck, kResultAsk, kResultAck
    std::uint64_t round = 0;
    // kStop, kGone: at most kMaxReason bytes
    std::string reason;

    bool operator==(const Control&) const = default;
};

std::vector<std::uint8_t> pack_control(const Control&);

// nullopt for an unknown kind, a field cut short, or a "done" or "first" whose first number is 0. Bytes after
// a kind's fields are ignored (a newer engine's additions); a reason keeps its first kMaxReason
// bytes; a rejoin byte other than 1 means no.
std::optional<Control> parse_control(std::span<const std::uint8_t> payload);

}  // namespace thresher::dist::node_link_control
