// The bytes of the TCP bulk channel (bulk_channel.h; layouts in engine/dist/README.md, section 2):
// the three handshake messages, the per-connection frame keys, and frame headers. Pure functions
// with no sockets, so the fuzzers drive them directly. Every parse checks the MAC (constant time)
// before it believes a field, and says nullopt for anything else than a well-formed message.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>

#include "dist/net/secret.h"
#include "dist/net/transport.h"

namespace thresher::dist::bulk_wire {

inline constexpr std::size_t kNonce = 16;
inline constexpr std::size_t kMac = 32;
inline constexpr std::size_t kHelloBody = 72;
inline constexpr std::size_t kHello = kHelloBody + kMac;  // 104
inline constexpr std::size_t kFrameHeader = 24;
inline constexpr std::size_t kFrameHead = kFrameHeader + kMac;  // header and its MAC: 56

using Nonce = std::array<std::uint8_t, kNonce>;
using Key = std::array<std::uint8_t, kMac>;
using HelloBytes = std::array<std::uint8_t, kHello>;
using FrameHead = std::array<std::uint8_t, kFrameHead>;

// HMAC-SHA256 of the concatenated parts; throws thresher::Error if OpenSSL fails.
void hmac(std::span<const std::uint8_t> key, std::initializer_list<std::span<const std::uint8_t>> parts,
          std::uint8_t* out);
bool mac_ok(std::span<const std::uint8_t> key, std::initializer_list<std::span<const std::uint8_t>> parts,
            const std::uint8_t* tag);

struct Hello {
    std::uint8_t step = 0;  // 1 connector's hello, 2 acceptor's answer, 3 connector's proof
    std::uint64_t run_id = 0;
    std::uint32_t from = 0, to = 0;
    std::uint64_t from_inc = 0, to_inc = 0;
    Nonce nonce_c{}, nonce_a{};
};

HelloBytes pack_hello(const Hello&, const Secret&);
// nullopt unless an authentic handshake message of step `step` of run `run_id`.
std::optional<Hello> parse_hello(std::span<const std::uint8_t, kHello> in, const Secret&, std::uint8_t step,
                                 std::uint64_t run_id);
// A fresh nonce from OpenSSL's RAND_bytes (throws if it fails).
Nonce fresh_nonce();
// The key of one direction of a connection ('c': frames from the connector, 'a': from the
// acceptor), from the step-3 message, which holds both nonces, ranks and incarnations.
Key frame_key(const Secret&, const HelloBytes& step3, char direction);

struct FrameHeader {
    MessageType type{};
    std::uint64_t seq = 0;
    std::uint64_t length = 0;
};
FrameHead pack_frame_head(const Key&, MessageType type, std::uint64_t seq, std::uint64_t length);
// nullopt unless the header's MAC verifies under `key` and its fields are well-formed (the
// caller checks the sequence number and the length against its limits).
std::optional<FrameHeader> parse_frame_head(std::span<const std::uint8_t, kFrameHead> in, const Key& key);

}  // namespace thresher::dist::bulk_wire
