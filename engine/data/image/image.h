// A decoded image and the limits every decoder checks before it allocates.
//
// Pixels are 8-bit, row-major, interleaved (HWC): grey images have 1 channel, colour images 3
// (RGB). Alpha is removed by the decoders (composited on black for PNG, dropped elsewhere), as
// a classifier's input has no alpha; palette images become RGB, or grey when every palette
// entry is grey.
//
// Limits: a file's header decides how much a decoder allocates, so a 100-byte PNG can declare
// 100000 x 100000 pixels (a decompression bomb: 30 GB of RGB). The header's size is checked
// against ImageLimits first, so a hostile file costs at most max_pixels x 3 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace thresher::data {

struct Image {
    int width = 0, height = 0;
    int channels = 0;                  // 1 (grey) or 3 (RGB)
    std::vector<std::uint8_t> pixels;  // height * width * channels, HWC

    std::size_t size() const { return static_cast<std::size_t>(width) * height * channels; }
};

struct ImageLimits {
    int max_side = 16384;                        // pixels per side (JPEG's own limit is 65500)
    std::uint64_t max_pixels = 64ull << 20;      // width * height: 64 Mpx, 192 MiB of RGB
    std::uint64_t max_file_bytes = 256ull << 20; // read into memory whole before decoding
};

// Throws DataError "<name>: <format> header declares W x H pixels, more than <limit>" when the
// declared size is empty or over the limits. Decoders call it before allocating pixels.
void check_image_size(const std::string& name, const char* format, std::uint64_t width,
                      std::uint64_t height, const ImageLimits& limits);

}  // namespace thresher::data
