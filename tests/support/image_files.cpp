#include "image_files.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <jpeglib.h>
#include <png.h>
#include <webp/encode.h>

#include "data/data_source.h"
#include "data/idx_reader.h"

namespace test_support {

namespace fs = std::filesystem;

Pixels pattern(int width, int height, int channels, unsigned seed) {
    Pixels p{width, height, channels, {}};
    p.data.resize(static_cast<std::size_t>(width) * height * channels);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            for (int c = 0; c < channels; ++c)
                p.data[(static_cast<std::size_t>(y) * width + x) * channels + c] =
                    static_cast<std::uint8_t>((x * 7 + y * 13 + c * 71 + seed * 31 + (x * y) % 17) % 256);
    return p;
}

void write_png(const std::string& path, const Pixels& p) {
    png_image image{};
    image.version = PNG_IMAGE_VERSION;
    image.width = static_cast<png_uint_32>(p.width);
    image.height = static_cast<png_uint_32>(p.height);
    image.format = p.channels == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    if (!png_image_write_to_file(&image, path.c_str(), 0, p.data.data(), 0, nullptr))
        throw std::runtime_error(path + ": png_image_write_to_file: " + image.message);
}

void write_jpeg(const std::string& path, const Pixels& p, int quality, bool progressive) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw std::runtime_error(path + ": cannot create");
    jpeg_compress_struct cinfo{};
    jpeg_error_mgr err{};
    cinfo.err = jpeg_std_error(&err);  // encoding our own buffers: libjpeg's exit() would be a test bug
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = static_cast<JDIMENSION>(p.width);
    cinfo.image_height = static_cast<JDIMENSION>(p.height);
    cinfo.input_components = p.channels;
    cinfo.in_color_space = p.channels == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    if (progressive) jpeg_simple_progression(&cinfo);
    jpeg_start_compress(&cinfo, TRUE);
    const std::size_t stride = static_cast<std::size_t>(p.width) * p.channels;
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = const_cast<std::uint8_t*>(p.data.data()) + cinfo.next_scanline * stride;
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    std::fclose(f);
}

void write_webp_lossless(const std::string& path, const Pixels& p) {
    std::vector<std::uint8_t> rgb;
    const Pixels* src = &p;
    Pixels expanded;
    if (p.channels == 1) {
        expanded = {p.width, p.height, 3, {}};
        for (auto v : p.data) expanded.data.insert(expanded.data.end(), {v, v, v});
        src = &expanded;
    }
    std::uint8_t* out = nullptr;
    const std::size_t n = WebPEncodeLosslessRGB(src->data.data(), p.width, p.height, p.width * 3, &out);
    if (n == 0) throw std::runtime_error(path + ": WebPEncodeLosslessRGB failed");
    write_bytes(path, std::vector<std::uint8_t>(out, out + n));
    WebPFree(out);
}

void write_bmp(const std::string& path, const Pixels& p) {
    const int bpp = p.channels == 1 ? 8 : 24;
    const std::uint32_t stride = (static_cast<std::uint32_t>(p.width) * bpp + 31) / 32 * 4;
    const std::uint32_t palette = bpp == 8 ? 256 * 4 : 0;
    const std::uint32_t offset = 14 + 40 + palette;
    std::vector<std::uint8_t> b(offset + stride * static_cast<std::uint32_t>(p.height), 0);
    auto u32 = [&](std::size_t at, std::uint32_t v) {
        for (int i = 0; i < 4; ++i) b[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
    };
    b[0] = 'B', b[1] = 'M';
    u32(2, static_cast<std::uint32_t>(b.size()));
    u32(10, offset);
    u32(14, 40);
    u32(18, static_cast<std::uint32_t>(p.width));
    u32(22, static_cast<std::uint32_t>(p.height));  // bottom-up
    b[26] = 1;
    b[28] = static_cast<std::uint8_t>(bpp);
    for (std::uint32_t i = 0; i < palette / 4; ++i) b[54 + 4 * i] = b[55 + 4 * i] = b[56 + 4 * i] = static_cast<std::uint8_t>(i);
    for (int y = 0; y < p.height; ++y) {
        std::uint8_t* row = b.data() + offset + stride * static_cast<std::uint32_t>(p.height - 1 - y);
        for (int x = 0; x < p.width; ++x) {
            const std::uint8_t* s = p.data.data() + (static_cast<std::size_t>(y) * p.width + x) * p.channels;
            if (bpp == 8) row[x] = s[0];
            else row[3 * x] = s[2], row[3 * x + 1] = s[1], row[3 * x + 2] = s[0];
        }
    }
    write_bytes(path, b);
}

int write_fashion_png_folder(const std::string& idx_folder, const std::string& out, int train, int test) {
    static const char* kNames[10] = {"0_T-shirt", "1_Trouser", "2_Pullover", "3_Dress", "4_Coat",
                                     "5_Sandal", "6_Shirt", "7_Sneaker", "8_Bag", "9_Ankle-boot"};
    const auto files = thresher::data::find_idx_files(idx_folder);
    int written = 0;
    auto write_set = [&](const std::string& images_path, const std::string& labels_path, const std::string& role, int n) {
        const auto images = thresher::data::read_idx(images_path);
        const auto labels = thresher::data::read_idx(labels_path);
        const int h = static_cast<int>(images.dims[1]), w = static_cast<int>(images.dims[2]);
        n = std::min<int>(n, static_cast<int>(images.dims[0]));
        for (const char* name : kNames) fs::create_directories(fs::path(out) / role / name);
        for (int i = 0; i < n; ++i) {
            Pixels p{w, h, 1, {}};
            const auto* src = images.data.data() + static_cast<std::size_t>(i) * w * h;
            p.data.assign(src, src + static_cast<std::size_t>(w) * h);
            char file[16];
            std::snprintf(file, sizeof file, "%05d.png", i);
            write_png((fs::path(out) / role / kNames[labels.data[static_cast<std::size_t>(i)]] / file).string(), p);
            ++written;
        }
    };
    write_set(files.train_images, files.train_labels, "train", train);
    if (test > 0) write_set(files.test_images, files.test_labels, "test", test);
    return written;
}

}  // namespace test_support
