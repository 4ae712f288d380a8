// The run secret: the key every datagram of a distributed run is authenticated with (HMAC-SHA256,
// see datagram.h). The launcher makes a fresh one per run and hands it to every node either as a
// file (`--secret-file`, mode 0600) or in the THRESHER_SECRET environment variable.
//
// There is deliberately no way to take the secret from a command-line value: argv is readable by
// every user on the machine (/proc/<pid>/cmdline, `ps`), so a secret there is no secret.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace thresher::dist {

// Key bytes, wiped from memory when the object goes away. Always holds at least kMinBytes.
class Secret {
public:
    static constexpr std::size_t kMinBytes = 16;        // 128 bits: the least we accept
    static constexpr std::size_t kGeneratedBytes = 32;  // 256 bits: what generate_secret() makes

    // Throws thresher::Error when `bytes` is shorter than kMinBytes.
    explicit Secret(std::vector<std::uint8_t> bytes);
    Secret(const Secret&) = default;
    Secret(Secret&&) noexcept = default;
    // By value: the old key ends up in `other`, whose destructor wipes it.
    Secret& operator=(Secret other) noexcept;
    ~Secret();

    std::span<const std::uint8_t> bytes() const { return bytes_; }
    std::size_t size() const { return bytes_.size(); }
    // Lower-case hex, the form write_secret_file() stores and THRESHER_SECRET accepts.
    std::string to_hex() const;

private:
    std::vector<std::uint8_t> bytes_;
};

// Reads the secret from a file that must be a regular file owned by the current user with no
// group or world permissions (0600 or stricter); anything else is refused with an error naming
// the file and its mode. Contents: hex (64 digits for 32 bytes) or raw bytes; surrounding
// whitespace is ignored. At least Secret::kMinBytes after decoding.
Secret load_secret(const std::string& secret_file);

// Reads THRESHER_SECRET (hex or raw, at least Secret::kMinBytes). Throws when it is unset or short.
Secret secret_from_env();

// Secret::kGeneratedBytes from OpenSSL's CSPRNG (RAND_bytes).
Secret generate_secret();

// Creates `path` with mode 0600 and writes the secret as hex. Refuses to overwrite an existing
// file (O_EXCL), so a secret is never written into a file someone else prepared.
void write_secret_file(const std::string& path, const Secret& secret);

// Decodes a secret given as text: hex when it is all hex digits (even count), raw bytes otherwise,
// after trimming ASCII whitespace. `what` names the source in the error ("THRESHER_SECRET").
Secret parse_secret(std::string_view text, const std::string& what);

}  // namespace thresher::dist
