// Reading zip archives held in memory (libzip): DL4J model zips (configuration.json,
// coefficients.bin, ...) and Keras 3 .keras archives (config.json, model.weights.h5).
// An entry is read only after its declared size is bounded: at most kMaxEntryBytes, and at most
// what deflate could expand the stored bytes to (1032:1), so a lying header or a zip bomb is an
// error naming the entry, never a huge allocation. libzip checks each entry's CRC as it is read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

struct zip;

namespace thresher::config {

class ZipArchive {
public:
    static constexpr std::uint64_t kMaxEntryBytes = std::uint64_t{4} << 30;  // 4 GiB

    // `bytes` must outlive the archive. Throws ConfigError naming `source` when it is no zip.
    ZipArchive(std::span<const std::uint8_t> bytes, std::string source);
    ~ZipArchive();
    ZipArchive(const ZipArchive&) = delete;
    ZipArchive& operator=(const ZipArchive&) = delete;

    std::vector<std::string> names() const;
    bool contains(const std::string& name) const;
    // The entry's bytes, or nothing when there is no such entry; throws ConfigError when it
    // cannot be read (truncated, bad CRC, too large, encrypted, unknown compression).
    std::optional<std::vector<std::uint8_t>> read(const std::string& name) const;

private:
    struct Closer {
        void operator()(zip* z) const;
    };
    std::unique_ptr<zip, Closer> zip_;
    std::string source_;
};

// True when `bytes` start like a zip archive (a local file header, or an empty archive's end record).
bool looks_like_zip(std::span<const std::uint8_t> bytes);

}  // namespace thresher::config
