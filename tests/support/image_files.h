// Image files for the image-folder suites, written with the same Debian libraries users' tools
// use (libpng's and libjpeg-turbo's encoders, libwebp's), not with the decoders under test; BMP,
// which no such library writes, by hand from its documented layout. Pixels are HWC bytes: 1
// channel (grey) or 3 (RGB). Each function throws std::runtime_error naming the file on failure.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "weight_files.h"  // read_bytes, write_bytes

namespace test_support {

struct Pixels {
    int width = 0, height = 0, channels = 1;
    std::vector<std::uint8_t> data;  // height * width * channels
};

// A smooth, seeded pattern (every pixel differs from its neighbours a little): resizes and
// channel conversions then have something to get wrong.
Pixels pattern(int width, int height, int channels, unsigned seed = 1);

void write_png(const std::string& path, const Pixels&);
void write_jpeg(const std::string& path, const Pixels&, int quality = 95, bool progressive = false);
void write_webp_lossless(const std::string& path, const Pixels&);  // grey is written as RGB
void write_bmp(const std::string& path, const Pixels&);            // grey: 8-bit palette; RGB: 24-bit

// Fashion-MNIST (the IDX files in `idx_folder`) as PNG files in class folders, the issue 24
// layout: out/train/<class>/<index>.png for the first `train` training images and
// out/test/<class>/<index>.png for the first `test` t10k images, index zero-padded to 5 digits,
// classes named 0_T-shirt ... 9_Ankle-boot (sorted order = label order). Returns the count written.
int write_fashion_png_folder(const std::string& idx_folder, const std::string& out, int train, int test);

}  // namespace test_support
