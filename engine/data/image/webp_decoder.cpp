// WebP through libwebp: WebPGetFeatures reads the header (size, alpha, animation) without
// decoding, the size is checked, then WebPDecodeRGBInto writes into our buffer. libwebp reports
// errors by return value; nothing here can longjmp or exit.
#include <webp/decode.h>

#include "core/error.h"
#include "data/image/decoders.h"

namespace thresher::data::decoders {

namespace {

const char* status_text(VP8StatusCode s) {
    switch (s) {
        case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
        case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
        case VP8_STATUS_BITSTREAM_ERROR: return "corrupt bitstream";
        case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
        case VP8_STATUS_SUSPENDED: return "suspended";
        case VP8_STATUS_USER_ABORT: return "aborted";
        case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated (not enough data)";
        default: return "cannot be decoded";
    }
}

}  // namespace

Image decode_webp(const std::uint8_t* bytes, std::size_t size, const std::string& name, const ImageLimits& limits) {
    WebPBitstreamFeatures features;
    const VP8StatusCode status = WebPGetFeatures(bytes, size, &features);
    if (status != VP8_STATUS_OK) throw DataError(name + ": WebP: " + status_text(status));
    if (features.has_animation) throw DataError(name + ": WebP: animated WebP files are not read (one frame per image)");
    check_image_size(name, "WebP", static_cast<std::uint64_t>(features.width), static_cast<std::uint64_t>(features.height),
                     limits);
    Image out;
    out.width = features.width;
    out.height = features.height;
    out.channels = 3;  // WebP is always colour; alpha is dropped
    out.pixels.resize(out.size());
    if (!WebPDecodeRGBInto(bytes, size, out.pixels.data(), out.pixels.size(), out.width * 3))
        throw DataError(name + ": WebP: corrupt or truncated image data");
    return out;
}

}  // namespace thresher::data::decoders
