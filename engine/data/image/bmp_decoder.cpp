// BMP (Windows bitmap) read by a small bounded parser rather than a library: Debian's decoders
// for BMP come inside whole imaging frameworks (ImageMagick, GraphicsMagick, gdk-pixbuf with
// GLib, OpenCV, Leptonica, FreeImage), each pulling tens of libraries onto cluster nodes that get
// a bare engine, or in stb_image (libstb-dev), a header whose decoders have a long CVE record
// and whose limits are compile-time macros. Uncompressed BMP is a header and rows of pixels;
// every offset below is checked against the buffer before it is read.
//
// Read: the 12-byte OS/2 core header and the 40/52/56/108/124-byte Windows headers; 1, 4 and
// 8 bits per pixel with a palette; 16 and 32 (BI_RGB, or BI_BITFIELDS masks); 24. Refused,
// named: RLE and embedded JPEG/PNG compression. Rows bottom-up (height > 0) or top-down (< 0).
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/image/decoders.h"

namespace thresher::data::decoders {

namespace {

constexpr std::uint32_t kRgb = 0, kRle8 = 1, kRle4 = 2, kBitfields = 3, kJpeg = 4, kPng = 5, kAlphaBitfields = 6;

class Bytes {
public:
    Bytes(const std::uint8_t* b, std::size_t n, const std::string& name) : b_(b), n_(n), name_(name) {}
    std::uint32_t u32(std::size_t at) const {
        need(at, 4);
        return b_[at] | (b_[at + 1] << 8) | (b_[at + 2] << 16) | (std::uint32_t{b_[at + 3]} << 24);
    }
    std::uint16_t u16(std::size_t at) const {
        need(at, 2);
        return static_cast<std::uint16_t>(b_[at] | (b_[at + 1] << 8));
    }
    std::int32_t i32(std::size_t at) const { return static_cast<std::int32_t>(u32(at)); }
    const std::uint8_t* at(std::size_t offset, std::uint64_t len, const char* what) const {
        if (offset > n_ || len > n_ - offset)
            throw DataError(name_ + ": BMP: truncated: " + what + " needs " + std::to_string(len) + " bytes at byte " +
                            std::to_string(offset) + ", the file has " + std::to_string(n_));
        return b_ + offset;
    }

private:
    void need(std::size_t at, std::size_t len) const { (void)this->at(at, len, "the header"); }
    const std::uint8_t* b_;
    std::size_t n_;
    const std::string& name_;
};

// One BI_BITFIELDS channel: where its bits are and how to stretch them to 0..255.
struct Field {
    std::uint32_t mask = 0;
    int shift = 0;
    std::uint64_t max = 0;
    explicit Field(std::uint32_t m) : mask(m) {
        if (m == 0) return;
        shift = std::countr_zero(m);
        max = (std::uint64_t{m} >> shift);
    }
    std::uint8_t operator()(std::uint32_t px) const {
        if (mask == 0) return 0;
        return static_cast<std::uint8_t>(((std::uint64_t{px & mask} >> shift) * 255 + max / 2) / max);
    }
};

}  // namespace

Image decode_bmp(const std::uint8_t* data, std::size_t size, const std::string& name, const ImageLimits& limits) {
    const Bytes b(data, size, name);
    const std::uint32_t pixel_offset = b.u32(10);
    const std::uint32_t header = b.u32(14);
    std::int64_t width = 0, height = 0;
    std::uint32_t bpp = 0, compression = kRgb, colours_used = 0;
    std::size_t palette_at = 14 + std::size_t{header};
    std::size_t palette_entry = 4;
    std::uint32_t masks[3] = {0, 0, 0};
    if (header == 12) {  // BITMAPCOREHEADER (OS/2)
        width = b.u16(18);
        height = b.u16(20);
        bpp = b.u16(24);
        palette_entry = 3;
    } else if (header == 40 || header == 52 || header == 56 || header == 108 || header == 124) {
        width = b.i32(18);
        height = b.i32(22);
        bpp = b.u16(28);
        compression = b.u32(30);
        colours_used = b.u32(46);
        if (compression == kBitfields || compression == kAlphaBitfields) {
            // Masks follow a 40-byte header; later headers hold them at the same place.
            for (int c = 0; c < 3; ++c) masks[c] = b.u32(54 + 4 * static_cast<std::size_t>(c));
            if (header == 40) palette_at += compression == kAlphaBitfields ? 16 : 12;
        }
    } else {
        throw DataError(name + ": BMP: unknown header size " + std::to_string(header) +
                        " (expected 12, 40, 52, 56, 108 or 124)");
    }
    if (compression == kRle8 || compression == kRle4 || compression == kJpeg || compression == kPng)
        throw DataError(name + ": BMP: " +
                        std::string(compression == kJpeg ? "embedded JPEG" : compression == kPng ? "embedded PNG" : "RLE") +
                        " compression is not read; save the image uncompressed (or as PNG)");
    if (compression != kRgb && compression != kBitfields && compression != kAlphaBitfields)
        throw DataError(name + ": BMP: unknown compression " + std::to_string(compression));
    if (width <= 0) throw DataError(name + ": BMP: header declares width " + std::to_string(width));
    const bool top_down = height < 0;
    height = std::llabs(height);
    check_image_size(name, "BMP", static_cast<std::uint64_t>(width), static_cast<std::uint64_t>(height), limits);
    const bool bitfields = compression != kRgb;
    if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
        throw DataError(name + ": BMP: " + std::to_string(bpp) + " bits per pixel (expected 1, 4, 8, 16, 24 or 32)");
    if (bitfields && bpp != 16 && bpp != 32)
        throw DataError(name + ": BMP: bit-field masks with " + std::to_string(bpp) + " bits per pixel");
    if (!bitfields && bpp == 16) masks[0] = 0x7c00, masks[1] = 0x03e0, masks[2] = 0x001f;  // 5-5-5
    if (!bitfields && bpp == 32) masks[0] = 0xff0000, masks[1] = 0x00ff00, masks[2] = 0x0000ff;

    // The palette: 2^bpp entries unless the header says fewer; grey when every entry is.
    std::vector<std::uint8_t> palette;  // RGB triples
    bool grey = false;
    if (bpp <= 8) {
        const std::uint32_t full = 1u << bpp;
        const std::uint32_t n = colours_used == 0 || colours_used > full ? full : colours_used;
        const std::uint8_t* p = b.at(palette_at, std::uint64_t{n} * palette_entry, "the palette");
        palette.resize(std::size_t{n} * 3);
        grey = true;
        for (std::uint32_t i = 0; i < n; ++i) {
            const std::uint8_t* e = p + std::size_t{i} * palette_entry;  // B, G, R
            palette[3 * i] = e[2], palette[3 * i + 1] = e[1], palette[3 * i + 2] = e[0];
            grey = grey && e[0] == e[1] && e[1] == e[2];
        }
    }
    const std::uint64_t stride = (static_cast<std::uint64_t>(width) * bpp + 31) / 32 * 4;
    const std::uint8_t* rows = b.at(pixel_offset, stride * static_cast<std::uint64_t>(height), "the pixel rows");

    Image out;
    out.width = static_cast<int>(width);
    out.height = static_cast<int>(height);
    out.channels = grey ? 1 : 3;
    out.pixels.resize(out.size());
    const Field r(masks[0]), g(masks[1]), bl(masks[2]);
    for (std::int64_t y = 0; y < height; ++y) {
        const std::uint8_t* row = rows + stride * static_cast<std::uint64_t>(top_down ? y : height - 1 - y);
        std::uint8_t* dst = out.pixels.data() + static_cast<std::size_t>(y) * static_cast<std::size_t>(width) * out.channels;
        for (std::int64_t x = 0; x < width; ++x) {
            std::uint8_t rgb[3];
            if (bpp <= 8) {
                const std::uint64_t bit = static_cast<std::uint64_t>(x) * bpp;
                const std::uint32_t index = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
                if (std::size_t{index} * 3 >= palette.size())
                    throw DataError(name + ": BMP: pixel (" + std::to_string(x) + ", " + std::to_string(y) +
                                    ") uses colour " + std::to_string(index) + ", the palette has " +
                                    std::to_string(palette.size() / 3));
                rgb[0] = palette[3 * index], rgb[1] = palette[3 * index + 1], rgb[2] = palette[3 * index + 2];
            } else if (bpp == 24) {
                const std::uint8_t* p = row + 3 * x;
                rgb[0] = p[2], rgb[1] = p[1], rgb[2] = p[0];
            } else {
                const std::uint8_t* p = row + x * (bpp / 8);
                const std::uint32_t px = bpp == 16 ? static_cast<std::uint32_t>(p[0] | (p[1] << 8))
                                                   : (p[0] | (p[1] << 8) | (p[2] << 16) | (std::uint32_t{p[3]} << 24));
                rgb[0] = r(px), rgb[1] = g(px), rgb[2] = bl(px);
            }
            if (grey) {
                dst[x] = rgb[0];
            } else {
                dst[3 * x] = rgb[0], dst[3 * x + 1] = rgb[1], dst[3 * x + 2] = rgb[2];
            }
        }
    }
    return out;
}

}  // namespace thresher::data::decoders
