// libFuzzer target for the image decoders (JPEG via libjpeg-turbo, PNG via libpng, WebP via
// libwebp, BMP by engine/data/image/bmp_decoder.cpp): any byte string must give an Image or a
// thresher::DataError, never a crash, a sanitizer report, an exit() from a library's default
// error handler, or an allocation beyond the limits. The format is sniffed from the bytes, so
// one fuzzer reaches every decoder; the seeds hold one small file of each.
//
// Limits are tighter than the defaults (1 Mpx, 2048 per side) so that libFuzzer's RSS limit
// measures leaks rather than legitimately large images; the checks are the same code. A decoded
// image also goes through image_to_sample (crop to 3x8x8, stretch to 1x5x7): channel conversion
// and resizing read every pixel the decoder claims to have written.
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "data/image/image_decoder.h"
#include "data/image/image_sample.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace thresher::data;
    ImageLimits limits;
    limits.max_side = 2048;
    limits.max_pixels = 1u << 20;
    try {
        const Image image = decode_image(data, size, "fuzz", limits);
        if (image.pixels.size() != image.size() || (image.channels != 1 && image.channels != 3)) __builtin_trap();
        std::vector<float> out(3 * 8 * 8);
        image_to_sample(image, {3, 8, 8}, ImageFit::Crop, out.data());
        image_to_sample(image, {1, 5, 7}, ImageFit::Stretch, out.data());
        for (float v : out)
            if (!(v >= 0.0f && v <= 1.0f)) __builtin_trap();
    } catch (const thresher::Error&) {
    }
    return 0;
}
