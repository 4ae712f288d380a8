// The Control messages of NodeLink (node_link.h): a kind byte, then its fields. Shared by the
// parts of node_link*.cpp; nothing outside the link reads them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace thresher::dist::node_link_control {

constexpr std::uint8_t kDone = 1;    // u64 messages originated, u64 the first the receiver was a destination of
constexpr std::uint8_t kJoined = 2;  // i32 epoch, i64 iteration, u8 rejoin
constexpr std::uint8_t kStop = 3;    // to a restarted controller: the reason, in words
constexpr std::uint8_t kLeft = 4;    // this node's run was stopped while others train on: not waited for
constexpr std::uint8_t kRoundAck = 5;   // u64 round: a node's averaging sums for that round arrived
constexpr std::uint8_t kResultAsk = 6;  // u64 round: the result of that round never came; send it again
constexpr std::uint8_t kGone = 7;       // the sender declared the receiver gone: the reason, in words
constexpr std::uint8_t kFirst = 8;      // u64: the first of the sender's messages this process of the receiver gets
constexpr std::uint8_t kResultAck = 9;  // u64 round: that round's AverageResult arrived
constexpr std::size_t kMaxReason = 1000;

}  // namespace thresher::dist::node_link_control
