// PNG through libpng's simplified API (png_image_*): it does libpng's setjmp/longjmp error
// handling itself and returns 0 with a message, so no longjmp crosses C++ frames here. The
// header is read first (png_image_begin_read_from_memory), its size checked, and only then is
// the pixel buffer allocated and the image decoded (png_image_finish_read).
#include <png.h>

#include "core/error.h"
#include "data/image/decoders.h"

namespace thresher::data::decoders {

namespace {

// Frees libpng's read state on every path (finish_read frees it too; freeing twice is safe).
struct PngImage {
    png_image image{};
    PngImage() { image.version = PNG_IMAGE_VERSION; }
    ~PngImage() { png_image_free(&image); }
    PngImage(const PngImage&) = delete;
    PngImage& operator=(const PngImage&) = delete;
};

[[noreturn]] void fail(const std::string& name, const png_image& image) {
    throw DataError(name + ": PNG: " + (image.message[0] ? image.message : "cannot be decoded"));
}

}  // namespace

Image decode_png(const std::uint8_t* bytes, std::size_t size, const std::string& name, const ImageLimits& limits) {
    PngImage png;
    if (!png_image_begin_read_from_memory(&png.image, bytes, size)) fail(name, png.image);
    check_image_size(name, "PNG", png.image.width, png.image.height, limits);
    const bool colour = (png.image.format & PNG_FORMAT_FLAG_COLOR) != 0;
    // 8-bit grey or RGB whatever the file holds (16-bit, palette, alpha): the simplified API
    // converts; alpha is composited onto the buffer, which starts black.
    png.image.format = colour ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
    Image out;
    out.width = static_cast<int>(png.image.width);
    out.height = static_cast<int>(png.image.height);
    out.channels = colour ? 3 : 1;
    out.pixels.assign(out.size(), 0);
    if (!png_image_finish_read(&png.image, nullptr, out.pixels.data(), 0, nullptr)) fail(name, png.image);
    // Warnings (a bad CRC in an ancillary chunk, say) leave a usable image: decoded as given.
    return out;
}

}  // namespace thresher::data::decoders
