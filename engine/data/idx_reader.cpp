// IDX parsing over two byte sources: a zlib gzFile (plain or gzip files alike) and a memory
// buffer (the fuzzer). One parser serves both, so the fuzzer exercises the code files take.
#include "data/idx_reader.h"

#include "core/error.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <sstream>

namespace thresher::data {

namespace {

constexpr std::uint8_t kUnsignedByte = 0x08;
// The header is trusted with at most this many elements; a larger product is a corrupt header,
// and checking before allocating keeps a hostile file from asking for terabytes.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 31;
// Never reserve more than this up front on a size we cannot verify (a gzip stream may be
// shorter than its header claims); the vector grows as data actually arrives.
constexpr std::size_t kMaxUnverifiedReserve = std::size_t{64} << 20;
constexpr std::size_t kChunk = std::size_t{4} << 20;
// Deflate cannot do better than 1032:1 (zlib's FAQ), so a gzip file of S bytes holds at most
// 1032*S bytes of data: a header asking for more is refused before anything is read.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

class ByteSource {
public:
    virtual ~ByteSource() = default;
    // Fills up to n bytes; fewer only at the end of the input. Stream corruption throws.
    virtual std::size_t read(std::uint8_t* dst, std::size_t n) = 0;
    // The most bytes that can remain: exact for memory and plain files; for gzip, what deflate's
    // best ratio (1032:1) could make of the compressed bytes.
    virtual std::uint64_t at_most_remaining() const = 0;
    // Why no more can remain, for messages ("a 2,048-byte gzip file").
    virtual std::string limit_reason() const = 0;
};

class MemorySource final : public ByteSource {
public:
    MemorySource(const std::uint8_t* bytes, std::size_t size) : bytes_(bytes), size_(size) {}
    std::size_t read(std::uint8_t* dst, std::size_t n) override {
        const std::size_t k = std::min(n, size_ - pos_);
        if (k > 0) std::memcpy(dst, bytes_ + pos_, k);
        pos_ += k;
        return k;
    }
    std::uint64_t at_most_remaining() const override { return size_ - pos_; }
    std::string limit_reason() const override { return "an input of " + std::to_string(size_) + " bytes"; }

private:
    const std::uint8_t* bytes_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

struct GzCloser {
    void operator()(gzFile_s* f) const { gzclose(f); }
};

class GzSource final : public ByteSource {
public:
    explicit GzSource(const std::string& path) : path_(path) {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec))
            throw DataError(path + ": cannot open: is a directory, expected an IDX file");
        errno = 0;
        file_.reset(gzopen(path.c_str(), "rb"));
        if (!file_) {
            const int err = errno;
            throw DataError(path + ": cannot open: " +
                            (err != 0 ? std::strerror(err) : "zlib could not allocate a reader"));
        }
        gzbuffer(file_.get(), 1u << 17);
        size_ = std::filesystem::file_size(path, ec);
        if (ec) throw DataError(path + ": cannot read its size: " + ec.message());
        direct_ = gzdirect(file_.get()) == 1;  // not gzip: read as is
    }

    std::size_t read(std::uint8_t* dst, std::size_t n) override {
        std::size_t got = 0;
        while (got < n) {
            const auto want = static_cast<unsigned>(std::min<std::size_t>(n - got, 1u << 30));
            const int r = gzread(file_.get(), dst + got, want);
            if (r > 0) got += static_cast<std::size_t>(r);
            if (r < 0 || static_cast<unsigned>(r) < want) {
                check_stream(got);
                break;  // clean end of input
            }
        }
        offset_ += got;
        return got;
    }
    std::uint64_t at_most_remaining() const override {
        const std::uint64_t total = direct_ ? size_ : size_ * kMaxDeflateRatio;
        return total > offset_ ? total - offset_ : 0;
    }
    std::string limit_reason() const override {
        return direct_ ? "a file of " + std::to_string(size_) + " bytes"
                       : "a gzip file of " + std::to_string(size_) + " bytes (at most " +
                             std::to_string(kMaxDeflateRatio) + " times that decompressed)";
    }

private:
    // A short read is either the end of the file or a zlib error; only the latter throws.
    void check_stream(std::size_t got_now) {
        int code = Z_OK;
        const char* raw = gzerror(file_.get(), &code);
        if (code == Z_OK) return;
        std::string msg = raw ? raw : "unknown zlib error";
        // zlib prefixes its messages with the path; ours already start with it.
        const std::string prefix = path_ + ": ";
        if (msg.compare(0, prefix.size(), prefix) == 0) msg.erase(0, prefix.size());
        std::ostringstream out;
        out << path_ << ": byte " << offset_ + got_now << " of the decompressed data: ";
        if (code == Z_BUF_ERROR)
            out << "truncated gzip stream (" << msg << ")";
        else
            out << "corrupt gzip stream: " << msg;
        throw DataError(out.str());
    }

    std::string path_;
    std::unique_ptr<gzFile_s, GzCloser> file_;
    std::uint64_t offset_ = 0;
    std::uint64_t size_ = 0;
    bool direct_ = false;
};

std::string hex_byte(std::uint8_t b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%02X", static_cast<unsigned>(b));
    return buf;
}

std::string type_name(std::uint8_t type) {
    switch (type) {
        case 0x08:
            return "unsigned byte";
        case 0x09:
            return "signed byte";
        case 0x0B:
            return "16-bit integer";
        case 0x0C:
            return "32-bit integer";
        case 0x0D:
            return "32-bit float";
        case 0x0E:
            return "64-bit float";
        default:
            return "not an IDX type";
    }
}

IdxArray parse(ByteSource& src, const std::string& name) {
    std::uint8_t magic[4] = {};
    const std::size_t got_magic = src.read(magic, 4);
    if (got_magic < 4) {
        throw DataError(name + ": header: truncated: expected at least 4 header bytes, found " +
                        std::to_string(got_magic));
    }
    if (magic[0] != 0 || magic[1] != 0) {
        throw DataError(name + ": byte 0: wrong magic: expected 00 00 <type> <dims>, found " +
                        hex_byte(magic[0]) + " " + hex_byte(magic[1]) + " " + hex_byte(magic[2]) +
                        " " + hex_byte(magic[3]) + " (not an IDX file)");
    }
    const std::uint8_t type = magic[2];
    if (type != kUnsignedByte) {
        throw DataError(name + ": byte 2: unsupported element type 0x" + hex_byte(type) + " (" +
                        type_name(type) + "); only 0x08 (unsigned byte) is supported");
    }
    const unsigned ndims = magic[3];
    if (ndims == 0) throw DataError(name + ": byte 3: the header declares 0 dimensions");

    const std::size_t header_size = 4 + 4 * std::size_t{ndims};
    std::uint8_t dim_bytes[4 * 255];
    const std::size_t got_dims = src.read(dim_bytes, 4 * std::size_t{ndims});
    if (got_dims < 4 * std::size_t{ndims}) {
        throw DataError(name + ": header: truncated: expected a " + std::to_string(header_size) +
                        "-byte header (" + std::to_string(ndims) + " dimensions), found " +
                        std::to_string(4 + got_dims) + " bytes");
    }

    IdxArray out;
    out.dims.resize(ndims);
    std::uint64_t count = 1;
    bool too_big = false;
    for (unsigned i = 0; i < ndims; ++i) {
        const std::uint8_t* p = dim_bytes + 4 * i;
        out.dims[i] = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
                      (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
        // Saturate instead of overflowing: once past the cap, the product only matters as "too
        // big", unless a later zero dimension makes it empty.
        if (!too_big) {
            count *= out.dims[i];
            if (count > kMaxElements) too_big = true;
        }
    }
    const bool has_zero = std::find(out.dims.begin(), out.dims.end(), 0u) != out.dims.end();
    if (has_zero) {
        count = 0;
    } else if (too_big) {
        std::ostringstream msg;
        msg << name << ": bytes 4-" << header_size - 1 << ": dimensions ";
        for (unsigned i = 0; i < ndims; ++i) msg << (i ? " x " : "") << out.dims[i];
        msg << " make more than 2^31 elements (corrupt header?)";
        throw DataError(msg.str());
    }

    const auto expected = static_cast<std::size_t>(count);
    if (src.at_most_remaining() < expected) {
        // Don't allocate for data that cannot be there.
        throw DataError(name + ": bytes 4-" + std::to_string(header_size - 1) + ": the header declares " +
                        std::to_string(expected) + " data bytes, but " + src.limit_reason() +
                        " holds at most " + std::to_string(src.at_most_remaining()) +
                        " after the header (truncated or corrupt file)");
    }
    out.data.reserve(std::min(expected, kMaxUnverifiedReserve));
    std::size_t got = 0;
    while (got < expected) {
        const std::size_t want = std::min(kChunk, expected - got);
        out.data.resize(got + want);
        const std::size_t r = src.read(out.data.data() + got, want);
        got += r;
        if (r < want) break;
    }
    if (got < expected) {
        throw DataError(name + ": truncated: expected " + std::to_string(expected) +
                        " data bytes after the " + std::to_string(header_size) +
                        "-byte header, found " + std::to_string(got));
    }

    // Reading one byte past the end also makes zlib verify the gzip trailer (CRC and length).
    std::uint8_t extra = 0;
    if (src.read(&extra, 1) != 0) {
        throw DataError(name + ": byte " + std::to_string(header_size + expected) +
                        ": trailing data after the " + std::to_string(expected) +
                        " data bytes the header declares");
    }
    return out;
}

}  // namespace

std::size_t IdxArray::element_count() const {
    std::size_t n = dims.empty() ? 0 : 1;
    for (std::uint32_t d : dims) n *= d;
    return n;
}

IdxArray read_idx(const std::string& path) {
    GzSource src(path);
    return parse(src, path);
}

IdxArray parse_idx(const std::uint8_t* bytes, std::size_t size, const std::string& name) {
    MemorySource src(bytes, size);
    return parse(src, name);
}

std::vector<std::uint8_t> encode_idx(const IdxArray& array) {
    std::vector<std::uint8_t> out{0, 0, kUnsignedByte,
                                  static_cast<std::uint8_t>(array.dims.size())};
    for (std::uint32_t d : array.dims) {
        out.push_back(static_cast<std::uint8_t>(d >> 24));
        out.push_back(static_cast<std::uint8_t>(d >> 16));
        out.push_back(static_cast<std::uint8_t>(d >> 8));
        out.push_back(static_cast<std::uint8_t>(d));
    }
    out.insert(out.end(), array.data.begin(), array.data.end());
    return out;
}

}  // namespace thresher::data
