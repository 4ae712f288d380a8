// Sealing and opening datagrams (layout in datagram.h). All multi-byte fields are big-endian and
// written/read one byte at a time, so alignment and host byte order never matter.
#include "dist/net/datagram.h"
#include "dist/net/wire.h"

#include <algorithm>
#include <memory>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "core/error.h"

namespace thresher::dist {

namespace {

struct MacDeleter {
    void operator()(EVP_MAC* mac) const { EVP_MAC_free(mac); }
};
struct MacContextDeleter {
    void operator()(EVP_MAC_CTX* ctx) const { EVP_MAC_CTX_free(ctx); }
};

// Fetched once: a fetch walks OpenSSL's provider tables, too slow to repeat per datagram.
// EVP_MAC objects are reference counted and safe to share between threads.
EVP_MAC* hmac_algorithm() {
    static const std::unique_ptr<EVP_MAC, MacDeleter> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr));
    return mac.get();
}

// HMAC-SHA256 keyed once per thread and key: setting the key costs more than MACing a whole
// datagram, so each thread keeps a keyed context and only resets it (EVP_MAC_init with no key
// reuses the key) for the next datagram. The key copy is wiped when the thread ends.
class KeyedHmac {
public:
    ~KeyedHmac() { OPENSSL_cleanse(key_.data(), key_.size()); }

    bool compute(std::span<const std::uint8_t> key, std::span<const std::uint8_t> data, std::uint8_t (&out)[kMacBytes]) {
        const bool same_key = ctx_ && key.size() == key_.size() && std::equal(key.begin(), key.end(), key_.begin());
        if (same_key) {
            if (EVP_MAC_init(ctx_.get(), nullptr, 0, nullptr) != 1) return false;
        } else if (!rekey(key)) {
            return false;
        }
        std::size_t length = 0;
        return EVP_MAC_update(ctx_.get(), data.data(), data.size()) == 1 &&
               EVP_MAC_final(ctx_.get(), out, &length, kMacBytes) == 1 && length == kMacBytes;
    }

private:
    bool rekey(std::span<const std::uint8_t> key) {
        OPENSSL_cleanse(key_.data(), key_.size());
        key_.clear();
        ctx_.reset();
        EVP_MAC* algorithm = hmac_algorithm();
        if (algorithm == nullptr) return false;
        std::unique_ptr<EVP_MAC_CTX, MacContextDeleter> ctx(EVP_MAC_CTX_new(algorithm));
        char digest[] = "SHA256";
        const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                                     OSSL_PARAM_construct_end()};
        if (!ctx || EVP_MAC_init(ctx.get(), key.data(), key.size(), params) != 1) return false;
        ctx_ = std::move(ctx);
        key_.assign(key.begin(), key.end());
        return true;
    }

    std::unique_ptr<EVP_MAC_CTX, MacContextDeleter> ctx_;
    std::vector<std::uint8_t> key_;
};

// HMAC-SHA256 of `data` under `key` into `out`. False when OpenSSL fails (it should not).
bool hmac_sha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> data,
                 std::uint8_t (&out)[kMacBytes]) {
    thread_local KeyedHmac hmac;
    return hmac.compute(key, data, out);
}

// Fields in network byte order, through the one wire helper (wire.h).
void put16(std::uint8_t* p, std::uint16_t v) { wire::store(p, v); }
void put32(std::uint8_t* p, std::uint32_t v) { wire::store(p, v); }
void put64(std::uint8_t* p, std::uint64_t v) { wire::store(p, v); }
std::uint16_t get16(const std::uint8_t* p) { return wire::load<std::uint16_t>(p); }
std::uint32_t get32(const std::uint8_t* p) { return wire::load<std::uint32_t>(p); }
std::uint64_t get64(const std::uint8_t* p) { return wire::load<std::uint64_t>(p); }

}  // namespace

std::string_view to_string(DropReason why) {
    switch (why) {
    case DropReason::TooShort: return "TooShort";
    case DropReason::BadMagic: return "BadMagic";
    case DropReason::BadVersion: return "BadVersion";
    case DropReason::WrongRun: return "WrongRun";
    case DropReason::BadLength: return "BadLength";
    case DropReason::BadChunk: return "BadChunk";
    case DropReason::BadMac: return "BadMac";
    case DropReason::Replay: return "Replay";
    case DropReason::UnknownSender: return "UnknownSender";
    case DropReason::Oversize: return "Oversize";
    }
    return "Unknown";
}

std::vector<std::uint8_t> seal(const DatagramHeader& header, std::span<const std::uint8_t> payload,
                               const Secret& secret) {
    if (payload.size() > kMaxPayloadBytes)
        throw Error("seal: payload of " + std::to_string(payload.size()) + " bytes exceeds " +
                    std::to_string(kMaxPayloadBytes));
    if (header.chunk_count == 0 || header.chunk_index >= header.chunk_count)
        throw Error("seal: chunk " + std::to_string(header.chunk_index) + " of " +
                    std::to_string(header.chunk_count));
    std::vector<std::uint8_t> out(kHeaderBytes + payload.size() + kMacBytes);
    std::uint8_t* p = out.data();
    put32(p + 0, kDatagramMagic);
    p[4] = kDatagramVersion;
    p[5] = header.type;
    p[6] = header.flags;
    p[7] = 0;
    put64(p + 8, header.run_id);
    put32(p + 16, header.sender);
    put64(p + 20, header.message_id);
    put16(p + 28, header.chunk_index);
    put16(p + 30, header.chunk_count);
    put16(p + 32, static_cast<std::uint16_t>(payload.size()));
    put64(p + 34, header.sender_incarnation);
    put64(p + 42, header.dest_incarnation);
    std::copy(payload.begin(), payload.end(), p + kHeaderBytes);
    std::uint8_t mac[kMacBytes];
    if (!hmac_sha256(secret.bytes(), std::span(out).first(kHeaderBytes + payload.size()), mac))
        throw Error("seal: OpenSSL HMAC-SHA256 failed");
    std::copy(std::begin(mac), std::end(mac), p + kHeaderBytes + payload.size());
    return out;
}

std::optional<Datagram> open(std::span<const std::uint8_t> bytes, const Secret& secret, std::uint64_t run_id,
                             DropReason& why) {
    // Structure first: each check only reads bytes an earlier check proved are there.
    if (bytes.size() > kMaxDatagramBytes) {
        why = DropReason::Oversize;
        return std::nullopt;
    }
    if (bytes.size() < kHeaderBytes + kMacBytes) {
        why = DropReason::TooShort;
        return std::nullopt;
    }
    const std::uint8_t* p = bytes.data();
    if (get32(p) != kDatagramMagic) {
        why = DropReason::BadMagic;
        return std::nullopt;
    }
    if (p[4] != kDatagramVersion || p[6] != 0 || p[7] != 0) {
        why = DropReason::BadVersion;
        return std::nullopt;
    }
    if (get64(p + 8) != run_id) {
        why = DropReason::WrongRun;
        return std::nullopt;
    }
    const std::size_t payload_length = get16(p + 32);
    if (kHeaderBytes + payload_length + kMacBytes != bytes.size()) {
        why = DropReason::BadLength;
        return std::nullopt;
    }
    const std::uint16_t chunk_index = get16(p + 28), chunk_count = get16(p + 30);
    if (chunk_count == 0 || chunk_index >= chunk_count) {
        why = DropReason::BadChunk;
        return std::nullopt;
    }
    // Then authenticity, in constant time so the comparison leaks nothing about the right MAC.
    std::uint8_t mac[kMacBytes];
    if (!hmac_sha256(secret.bytes(), bytes.first(kHeaderBytes + payload_length), mac) ||
        CRYPTO_memcmp(mac, p + kHeaderBytes + payload_length, kMacBytes) != 0) {
        why = DropReason::BadMac;
        return std::nullopt;
    }
    Datagram d;
    d.header.type = p[5];
    d.header.flags = p[6];
    d.header.run_id = run_id;
    d.header.sender = get32(p + 16);
    d.header.message_id = get64(p + 20);
    d.header.chunk_index = chunk_index;
    d.header.chunk_count = chunk_count;
    d.header.sender_incarnation = get64(p + 34);
    d.header.dest_incarnation = get64(p + 42);
    d.payload.assign(p + kHeaderBytes, p + kHeaderBytes + payload_length);
    return d;
}

IdWindow::State IdWindow::state(std::uint64_t id) const {
    if (id <= floor_) return State::BelowFloor;
    return above_.count(id) != 0 ? State::Done : State::New;
}

void IdWindow::advance_floor(std::uint64_t id) {
    if (id <= floor_) return;
    floor_ = id;
    above_.erase(above_.begin(), above_.upper_bound(floor_));
    while (!above_.empty() && *above_.begin() == floor_ + 1) {
        floor_ = *above_.begin();
        above_.erase(above_.begin());
    }
}

void IdWindow::mark_done(std::uint64_t id) {
    if (id <= floor_) return;
    if (id == floor_ + 1) {
        floor_ = id;
        // Slide over the ids that were waiting for this gap to fill.
        while (!above_.empty() && *above_.begin() == floor_ + 1) {
            floor_ = *above_.begin();
            above_.erase(above_.begin());
        }
    } else {
        above_.insert(id);
    }
}

}  // namespace thresher::dist
