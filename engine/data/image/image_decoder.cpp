// Format recognition, the size check shared by the decoders, and reading a file whole.
#include "data/image/image_decoder.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.h"
#include "data/image/decoders.h"

namespace thresher::data {

void check_image_size(const std::string& name, const char* format, std::uint64_t width,
                      std::uint64_t height, const ImageLimits& limits) {
    const std::string declared = std::to_string(width) + " x " + std::to_string(height) + " pixels";
    if (width == 0 || height == 0)
        throw DataError(name + ": " + format + ": header declares " + declared + " (an empty image)");
    const auto side = static_cast<std::uint64_t>(limits.max_side);
    if (width > side || height > side)
        throw DataError(name + ": " + format + ": header declares " + declared + ", more than the " +
                        std::to_string(limits.max_side) + " pixels per side allowed");
    if (width * height > limits.max_pixels)  // both <= max_side: no overflow
        throw DataError(name + ": " + format + ": header declares " + declared + " (" +
                        std::to_string(width * height) + "), more than the " +
                        std::to_string(limits.max_pixels) + " pixels allowed per image");
}

const char* to_string(ImageFormat f) {
    switch (f) {
        case ImageFormat::Jpeg: return "JPEG";
        case ImageFormat::Png: return "PNG";
        case ImageFormat::WebP: return "WebP";
        case ImageFormat::Bmp: return "BMP";
    }
    return "?";
}

std::optional<ImageFormat> sniff_image_format(const std::uint8_t* b, std::size_t n) {
    static constexpr std::uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (n >= 8 && std::memcmp(b, kPng, 8) == 0) return ImageFormat::Png;
    if (n >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return ImageFormat::Jpeg;
    if (n >= 12 && std::memcmp(b, "RIFF", 4) == 0 && std::memcmp(b + 8, "WEBP", 4) == 0)
        return ImageFormat::WebP;
    if (n >= 2 && b[0] == 'B' && b[1] == 'M') return ImageFormat::Bmp;
    return std::nullopt;
}

bool has_image_extension(const std::string& filename) {
    const auto dot = filename.rfind('.');
    if (dot == std::string::npos) return false;
    std::string ext = filename.substr(dot + 1);
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return ext == "jpg" || ext == "jpeg" || ext == "png" || ext == "webp" || ext == "bmp";
}

Image decode_image(const std::uint8_t* bytes, std::size_t size, const std::string& name,
                   const ImageLimits& limits) {
    const auto format = sniff_image_format(bytes, size);
    if (!format)
        throw DataError(name + ": not a JPEG, PNG, WebP or BMP file (" +
                        (size == 0 ? std::string("the file is empty") : "unknown first bytes") + ")");
    switch (*format) {
        case ImageFormat::Jpeg: return decoders::decode_jpeg(bytes, size, name, limits);
        case ImageFormat::Png: return decoders::decode_png(bytes, size, name, limits);
        case ImageFormat::WebP: return decoders::decode_webp(bytes, size, name, limits);
        case ImageFormat::Bmp: return decoders::decode_bmp(bytes, size, name, limits);
    }
    throw DataError(name + ": unknown image format");
}

Image read_image(const std::string& path, const ImageLimits& limits) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw DataError(path + ": cannot open (" + std::strerror(errno) + ")");
    const std::streamoff end = in.tellg();
    if (end < 0) throw DataError(path + ": cannot read its size");
    if (static_cast<std::uint64_t>(end) > limits.max_file_bytes)
        throw DataError(path + ": " + std::to_string(end) + " bytes, more than the " +
                        std::to_string(limits.max_file_bytes) + " allowed per image file");
    std::vector<std::uint8_t> bytes(static_cast<std::size_t>(end));
    in.seekg(0);
    if (!in.read(reinterpret_cast<char*>(bytes.data()), end))
        throw DataError(path + ": read failed (" + std::strerror(errno) + ")");
    return decode_image(bytes.data(), bytes.size(), path, limits);
}

}  // namespace thresher::data
