// libFuzzer target for the TCP bulk channel's bytes (dist/net/bulk_wire.h): handshake messages of
// each step, frame headers, and frame bodies -- the first code to read a connection's bytes, then
// what a frame delivers. Any input must be refused or accepted as a consistent message, never a
// crash, a sanitizer report or a throw. A random input almost never carries a valid MAC, so
// inputs whose first byte is odd get the right MACs written over the handshake's, the header's
// and the body's (bit 2 also sets the header's length to the bytes that follow it): that drives
// the fuzzer past the MACs into the field checks and the payload parsers.
// Accepted handshakes and headers must round-trip: packing what was parsed gives back the very
// bytes. A header's length is checked against its type's limit (BulkChannel::payload_limit) as
// the channel does before it reads a byte of the body; an authentic body then goes to the parser
// of its type, as NodeLink's would (join request and answer, averaging sums).
//
// Input: [mode][step][104-byte handshake][56-byte frame header][body][32-byte body MAC]
// (missing bytes are zeros for the handshake and header; a frame without its whole body and MAC
// is one the channel would still be reading).
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "dist/masters/join_protocol.h"
#include "dist/masters/round_payload.h"
#include "dist/net/bulk_channel.h"
#include "dist/net/bulk_wire.h"
#include "dist/net/wire.h"

namespace {

constexpr std::uint64_t kRun = 0x54485248'00000007ull;
// The run the frames belong to: its parameter count bounds every payload (as set_param_count does).
constexpr std::size_t kParams = 6, kState = 2;
constexpr int kNodes = 3;

const thresher::dist::Secret& key() {
    static const thresher::dist::Secret secret(std::vector<std::uint8_t>(32, 0x5C));
    return secret;
}

// The body's parser, as NodeLink takes each type that travels over the channel.
void deliver(thresher::dist::MessageType type, std::span<const std::uint8_t> payload) {
    using namespace thresher::dist;
    switch (type) {
        case MessageType::ParamsRequest:
            if (auto incarnation = parse_join_request(payload); incarnation && *incarnation == 0) __builtin_trap();
            break;
        case MessageType::Params:
            if (auto reply = parse_join_reply(payload, kNodes, kParams);
                reply && reply->kind != JoinReply::Kind::Refused && reply->members.size() != kNodes)
                __builtin_trap();
            break;
        case MessageType::Average:
        case MessageType::AverageResult: {
            std::vector<double> params(kParams), state(kState);
            int workers = 0;
            const std::uint64_t round = payload.size() >= 8 ? wire::load<std::uint64_t>(payload.data()) : 0;
            if (add_sums(payload, round, params, state, workers, type == MessageType::AverageResult) && workers < 1)
                __builtin_trap();
            break;
        }
        default: __builtin_trap();  // the channel carries no other type: the limit refused it
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::dist;
    using namespace thresher::dist::bulk_wire;
    if (size < 2) return 0;
    const bool seal = data[0] & 1;
    const bool fit_length = data[0] & 4;
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
    const std::size_t at_head = hello.size(), at_body = at_head + head.size();
    if (n > at_head) std::memcpy(head.data(), body + at_head, std::min(n - at_head, head.size()));
    const std::size_t rest = n > at_body ? n - at_body : 0;
    if (fit_length) wire::store(head.data() + 16, static_cast<std::uint64_t>(rest >= kMac ? rest - kMac : 0));
    if (seal) hmac(k, {std::span<const std::uint8_t>(head.data(), kFrameHeader)}, head.data() + kFrameHeader);
    const auto f = parse_frame_head(head, k);
    if (!f) return 0;
    if (!is_message_type(static_cast<std::uint8_t>(f->type))) __builtin_trap();
    if (pack_frame_head(k, f->type, f->seq, f->length) != head) __builtin_trap();

    // The body, once its length passed the type's limit (the channel reads none of it otherwise).
    const std::size_t limit = BulkChannel::payload_limit(f->type, kParams, kNodes);
    if (limit == 0 || f->length > limit) return 0;
    if (rest < f->length + kMac) return 0;  // still arriving
    const std::span<const std::uint8_t> payload(body + at_body, f->length);
    std::array<std::uint8_t, kMac> tag{};
    std::memcpy(tag.data(), body + at_body + f->length, kMac);
    const std::span<const std::uint8_t> header_bytes(head.data(), kFrameHeader);
    if (seal) hmac(k, {header_bytes, payload}, tag.data());
    if (!mac_ok(k, {header_bytes, payload}, tag.data())) {
        if (seal) __builtin_trap();  // the MAC just written must verify
        return 0;
    }
    deliver(f->type, payload);
    return 0;
}
