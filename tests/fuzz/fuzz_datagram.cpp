// libFuzzer target for dist::open(), the first code to touch bytes from the network: any input
// must be refused with a reason or accepted as a consistent datagram, never a crash, a sanitizer
// report or a throw. A random input almost never carries a valid MAC, so inputs whose first byte
// is odd get one computed (over the rest) before opening: that drives the fuzzer past the MAC
// into the parsing that only authentic datagrams reach, and through the id window.
#include <cstdint>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <span>
#include <vector>

#include "dist/net/datagram.h"

namespace {

constexpr std::uint64_t kRun = 0x54485253'00000001ull;

const thresher::dist::Secret& key() {
    static const thresher::dist::Secret secret(std::vector<std::uint8_t>(32, 0xA7));
    return secret;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::dist;
    if (size == 0) return 0;
    std::vector<std::uint8_t> bytes(data + 1, data + size);
    if (data[0] & 1) {
        // Append the right MAC, or overwrite the last 32 bytes with it (even bytes of the mode).
        const bool append = (data[0] & 2) != 0;
        if (!append && bytes.size() >= kMacBytes) bytes.resize(bytes.size() - kMacBytes);
        unsigned char mac[EVP_MAX_MD_SIZE];
        unsigned int length = 0;
        if (HMAC(EVP_sha256(), key().bytes().data(), static_cast<int>(key().size()), bytes.data(), bytes.size(), mac,
                 &length) == nullptr)
            __builtin_trap();
        bytes.insert(bytes.end(), mac, mac + length);
    }
    DropReason why = DropReason::Replay;
    const auto d = open(bytes, key(), kRun, why);
    if (!d) {
        if (why == DropReason::Replay || why == DropReason::UnknownSender) __builtin_trap();  // not open()'s to give
        return 0;
    }
    // Accepted: the fields must be what the checks promise, and sealing them again must give the
    // same bytes (one encoding per datagram, so nothing unchecked hides in the input).
    const auto& h = d->header;
    if (h.run_id != kRun || h.chunk_count == 0 || h.chunk_index >= h.chunk_count) __builtin_trap();
    if (d->payload.size() + kHeaderBytes + kMacBytes != bytes.size() || bytes.size() > kMaxDatagramBytes)
        __builtin_trap();
    if (seal(h, d->payload, key()) != bytes) __builtin_trap();
    IdWindow window;
    window.mark_done(h.message_id);
    if (h.message_id != 0 && window.state(h.message_id) == IdWindow::State::New) __builtin_trap();
    return 0;
}
