#include "dist/net/bulk_wire.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <cstring>

#include "core/error.h"
#include "dist/net/wire.h"

namespace thresher::dist::bulk_wire {

namespace {
constexpr std::uint32_t kHelloMagic = 0x54485248;  // "THRH"
constexpr std::uint32_t kFrameMagic = 0x54485246;  // "THRF"
constexpr std::uint8_t kVersion = 1;
}  // namespace

void hmac(std::span<const std::uint8_t> key, std::initializer_list<std::span<const std::uint8_t>> parts,
          std::uint8_t* out) {
    EVP_MAC* m = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    EVP_MAC_CTX* c = m ? EVP_MAC_CTX_new(m) : nullptr;
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", const_cast<char*>("SHA256"), 0), OSSL_PARAM_construct_end()};
    std::size_t out_len = 0;
    bool ok = c && EVP_MAC_init(c, key.data(), key.size(), params);
    for (const auto& part : parts) ok = ok && EVP_MAC_update(c, part.data(), part.size());
    ok = ok && EVP_MAC_final(c, out, &out_len, kMac);
    EVP_MAC_CTX_free(c);
    EVP_MAC_free(m);
    if (!ok || out_len != kMac) throw Error("bulk channel: HMAC-SHA256 failed in OpenSSL");
}

bool mac_ok(std::span<const std::uint8_t> key, std::initializer_list<std::span<const std::uint8_t>> parts,
            const std::uint8_t* tag) {
    Key expect;
    hmac(key, parts, expect.data());
    return CRYPTO_memcmp(expect.data(), tag, kMac) == 0;
}

HelloBytes pack_hello(const Hello& h, const Secret& secret) {
    HelloBytes out{};
    std::uint8_t* p = out.data();
    wire::store(p, kHelloMagic);
    wire::store(p + 4, kVersion);
    wire::store(p + 5, h.step);
    wire::store(p + 6, std::uint16_t{0});
    wire::store(p + 8, h.run_id);
    wire::store(p + 16, h.from);
    wire::store(p + 20, h.to);
    wire::store(p + 24, h.from_inc);
    wire::store(p + 32, h.to_inc);
    std::memcpy(p + 40, h.nonce_c.data(), kNonce);
    std::memcpy(p + 56, h.nonce_a.data(), kNonce);
    hmac(secret.bytes(), {std::span<const std::uint8_t>(p, kHelloBody)}, p + kHelloBody);
    return out;
}

std::optional<Hello> parse_hello(std::span<const std::uint8_t, kHello> in, const Secret& secret, std::uint8_t step,
                                 std::uint64_t run_id) {
    const std::uint8_t* p = in.data();
    if (wire::load<std::uint32_t>(p) != kHelloMagic || p[4] != kVersion || p[5] != step ||
        wire::load<std::uint16_t>(p + 6) != 0 || wire::load<std::uint64_t>(p + 8) != run_id)
        return std::nullopt;
    if (!mac_ok(secret.bytes(), {std::span<const std::uint8_t>(p, kHelloBody)}, p + kHelloBody)) return std::nullopt;
    Hello h;
    h.step = step;
    h.run_id = run_id;
    h.from = wire::load<std::uint32_t>(p + 16);
    h.to = wire::load<std::uint32_t>(p + 20);
    h.from_inc = wire::load<std::uint64_t>(p + 24);
    h.to_inc = wire::load<std::uint64_t>(p + 32);
    std::memcpy(h.nonce_c.data(), p + 40, kNonce);
    std::memcpy(h.nonce_a.data(), p + 56, kNonce);
    return h;
}

Nonce fresh_nonce() {
    Nonce n;
    if (RAND_bytes(n.data(), static_cast<int>(n.size())) != 1) throw Error("bulk channel: OpenSSL RAND_bytes failed");
    return n;
}

Key frame_key(const Secret& secret, const HelloBytes& step3, char direction) {
    static constexpr char kLabel[] = "thresher bulk frame key v1";
    Key k;
    const std::uint8_t d = static_cast<std::uint8_t>(direction);
    hmac(secret.bytes(),
         {std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(kLabel), sizeof kLabel),
          std::span<const std::uint8_t>(&d, 1), std::span<const std::uint8_t>(step3.data(), kHelloBody)},
         k.data());
    return k;
}

FrameHead pack_frame_head(const Key& key, MessageType type, std::uint64_t seq, std::uint64_t length) {
    FrameHead out{};
    std::uint8_t* p = out.data();
    wire::store(p, kFrameMagic);
    wire::store(p + 4, static_cast<std::uint8_t>(type));
    wire::store(p + 5, std::uint8_t{0});
    wire::store(p + 6, std::uint16_t{0});
    wire::store(p + 8, seq);
    wire::store(p + 16, length);
    hmac(key, {std::span<const std::uint8_t>(p, kFrameHeader)}, p + kFrameHeader);
    return out;
}

std::optional<FrameHeader> parse_frame_head(std::span<const std::uint8_t, kFrameHead> in, const Key& key) {
    const std::uint8_t* p = in.data();
    if (!mac_ok(key, {std::span<const std::uint8_t>(p, kFrameHeader)}, p + kFrameHeader)) return std::nullopt;
    if (wire::load<std::uint32_t>(p) != kFrameMagic || p[5] != 0 || wire::load<std::uint16_t>(p + 6) != 0 ||
        !is_message_type(p[4]))
        return std::nullopt;
    return FrameHeader{static_cast<MessageType>(p[4]), wire::load<std::uint64_t>(p + 8), wire::load<std::uint64_t>(p + 16)};
}

}  // namespace thresher::dist::bulk_wire
