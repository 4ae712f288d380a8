// The key and id of one run: the run secret mixed with a per-run nonce (`--run-nonce`).
//
// Why: a user may start several runs with one secret (a secret file kept between runs, a
// THRESHER_SECRET in a shell profile). Keyed by the secret alone, every run would accept the
// other runs' authentic datagrams up to the incarnation checks. With a nonce that is fresh per
// run (the launchers make one per run, and the Slurm batch script one per job) every datagram,
// handshake and frame key of the run is under a key no other run holds, and its run id differs,
// so another run's traffic is dropped at the run id (DropReason::WrongRun) or at the MAC.
//
// The nonce is not secret (it is on the engines' command lines): what keeps strangers out is
// still the secret; the nonce only separates runs that share it.
//
//   key    = HMAC-SHA256(secret, "thresher run key v1" || nonce)   (the secret itself when no nonce)
//   run id = first 8 bytes of SHA-256(key), big-endian              (unless --run-id is given)
//
// Without a nonce both are what they were before nonces existed, so nodes started by hand with
// only a secret still agree with each other.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dist/net/secret.h"

namespace thresher::dist {

inline constexpr std::size_t kMinRunNonceBytes = 8;
inline constexpr std::size_t kMaxRunNonceBytes = 64;
inline constexpr std::size_t kGeneratedRunNonceBytes = 16;

// Decodes a --run-nonce value: hex digits (even count) for kMinRunNonceBytes..kMaxRunNonceBytes
// bytes. Throws ConfigError naming `what` (the option) and what is wrong with the value.
std::vector<std::uint8_t> parse_run_nonce(std::string_view hex, const std::string& what);

// kGeneratedRunNonceBytes from OpenSSL's CSPRNG, as lower-case hex (what the launchers pass).
std::string generate_run_nonce();

// The run's key: the secret when `nonce` is empty, else HMAC-SHA256(secret, label || nonce).
Secret run_key(const Secret& secret, const std::vector<std::uint8_t>& nonce);

// The run id every datagram and handshake of the run carries: SHA-256(key)[0..8), big-endian.
std::uint64_t run_id_of(const Secret& key);

}  // namespace thresher::dist
