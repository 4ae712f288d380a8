// libFuzzer target for the TCP bulk channel's parsers (dist/net/bulk_wire.h): handshake messages
// of each step and frame headers, the first code to read a connection's bytes. Any input must be
// refused or accepted as a consistent message, never a crash, a sanitizer report or a throw. A
// random input almost never carries a valid MAC, so inputs whose first byte is odd get the right
// MAC written over their last 32 bytes: that drives the fuzzer past the MAC into the field checks.
// Accepted messages must round-trip: packing what was parsed gives back the very bytes.
#include <cstdint>
#include <cstring>
#include <vector>

#include "dist/net/bulk_wire.h"

namespace {

constexpr std::uint64_t kRun = 0x54485248'00000007ull;

const thresher::dist::Secret& key() {
    static const thresher::dist::Secret secret(std::vector<std::uint8_t>(32, 0x5C));
    return secret;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::dist::bulk_wire;
    if (size < 2) return 0;
    const bool seal = data[0] & 1;
    const std::uint8_t step = static_cast<std::uint8_t>(1 + data[1] % 3);
    const std::uint8_t* body = data + 2;
    const std::size_t n = size - 2;

    // A handshake message: the input's first 104 bytes (zero-padded).
    HelloBytes hello{};
    std::memcpy(hello.data(), body, std::min(n, hello.size()));
    if (seal) hmac(key().bytes(), {std::span<const std::uint8_t>(hello.data(), kHelloBody)}, hello.data() + kHelloBody);
    if (auto h = parse_hello(hello, key(), step, kRun)) {
        if (h->step != step || h->run_id != kRun) __builtin_trap();
        if (pack_hello(*h, key()) != hello) __builtin_trap();
    }

    // A frame header under a key derived from that message (as a connection's would be).
    const Key k = frame_key(key(), hello, (data[0] & 2) ? 'a' : 'c');
    FrameHead head{};
    if (n > hello.size()) std::memcpy(head.data(), body + hello.size(), std::min(n - hello.size(), head.size()));
    if (seal) hmac(k, {std::span<const std::uint8_t>(head.data(), kFrameHeader)}, head.data() + kFrameHeader);
    if (auto f = parse_frame_head(head, k)) {
        if (!thresher::dist::is_message_type(static_cast<std::uint8_t>(f->type))) __builtin_trap();
        if (pack_frame_head(k, f->type, f->seq, f->length) != head) __builtin_trap();
    }
    return 0;
}
