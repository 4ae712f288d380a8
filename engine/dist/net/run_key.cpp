// The run key and run id from the secret and the per-run nonce; see run_key.h.
#include "dist/net/run_key.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include "core/error.h"

namespace thresher::dist {

namespace {
constexpr std::string_view kLabel = "thresher run key v1";

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
}  // namespace

std::vector<std::uint8_t> parse_run_nonce(std::string_view hex, const std::string& what) {
    const auto bad = [&](const std::string& why) {
        const std::string shown = hex.size() > 40 ? std::string(hex.substr(0, 40)) + "..." : std::string(hex);
        return ConfigError(what + " \"" + shown + "\": " + why);
    };
    if (hex.size() % 2 != 0) throw bad("expected hex digits in pairs (an odd count was given)");
    const std::size_t bytes = hex.size() / 2;
    if (bytes < kMinRunNonceBytes || bytes > kMaxRunNonceBytes)
        throw bad("expected " + std::to_string(kMinRunNonceBytes) + " to " + std::to_string(kMaxRunNonceBytes) +
                  " bytes (" + std::to_string(2 * kMinRunNonceBytes) + " to " + std::to_string(2 * kMaxRunNonceBytes) +
                  " hex digits), got " + std::to_string(bytes));
    std::vector<std::uint8_t> out(bytes);
    for (std::size_t i = 0; i < bytes; ++i) {
        const int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
        if (hi < 0 || lo < 0)
            throw bad("character " + std::to_string(2 * i + (hi < 0 ? 1 : 2)) + " is not a hex digit");
        out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
    }
    return out;
}

std::string generate_run_nonce() {
    unsigned char bytes[kGeneratedRunNonceBytes];
    if (RAND_bytes(bytes, sizeof bytes) != 1) throw Error("run nonce: OpenSSL's RAND_bytes failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
        out += kHex[b >> 4];
        out += kHex[b & 15];
    }
    return out;
}

Secret run_key(const Secret& secret, const std::vector<std::uint8_t>& nonce) {
    if (nonce.empty()) return secret;
    std::vector<std::uint8_t> message(kLabel.begin(), kLabel.end());
    message.insert(message.end(), nonce.begin(), nonce.end());
    std::vector<std::uint8_t> key(EVP_MAX_MD_SIZE);
    unsigned int length = 0;
    if (!HMAC(EVP_sha256(), secret.bytes().data(), static_cast<int>(secret.size()), message.data(), message.size(),
              key.data(), &length))
        throw Error("run key: OpenSSL's HMAC-SHA256 failed");
    key.resize(length);
    Secret out(key);
    OPENSSL_cleanse(key.data(), key.size());
    return out;
}

std::uint64_t run_id_of(const Secret& key) {
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(key.bytes().data(), key.size(), digest);
    std::uint64_t id = 0;
    for (int i = 0; i < 8; ++i) id = (id << 8) | digest[i];
    return id;
}

}  // namespace thresher::dist
