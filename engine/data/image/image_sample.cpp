// Channel conversion, centre crop, bilinear resize and [0, 1] scaling of one image.
#include "data/image/image_sample.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace thresher::data {

ImageFit parse_image_fit(std::string_view text, std::string_view what) {
    if (text == "stretch") return ImageFit::Stretch;
    if (text == "crop") return ImageFit::Crop;
    // An empty `what`: the caller names the option itself (CLI11 prefixes the flag).
    throw ConfigError((what.empty() ? std::string() : std::string(what) + ": ") + "expected stretch or crop, got \"" +
                      std::string(text) + "\"");
}

const char* to_string(ImageFit f) { return f == ImageFit::Crop ? "crop" : "stretch"; }

namespace {

// The source pixels a destination axis of `dst` pixels samples: source coordinate
// (d + 0.5) * scale - 0.5 inside [first, first + len), clamped at the edges.
struct Tap {
    int lo, hi;
    float w;  // weight of hi
};

std::vector<Tap> taps(int first, int len, int dst) {
    std::vector<Tap> t(static_cast<std::size_t>(dst));
    const double scale = static_cast<double>(len) / dst;
    for (int d = 0; d < dst; ++d) {
        double s = (d + 0.5) * scale - 0.5;
        s = std::clamp(s, 0.0, static_cast<double>(len - 1));
        const int lo = static_cast<int>(std::floor(s));
        const int hi = std::min(lo + 1, len - 1);
        t[static_cast<std::size_t>(d)] = {first + lo, first + hi, static_cast<float>(s - lo)};
    }
    return t;
}

}  // namespace

void image_to_sample(const Image& image, const SampleShape& shape, ImageFit fit, float* out) {
    const int C = shape.channels, H = shape.height, W = shape.width;
    if (C != 1 && C != 3)
        throw ConfigError("image input needs 1 (grey) or 3 (RGB) channels, the model's input has " + std::to_string(C));
    // The source rectangle: everything, or the centred region with the target's aspect ratio.
    int x0 = 0, y0 = 0, w = image.width, h = image.height;
    if (fit == ImageFit::Crop) {
        // w/h vs W/H compared in integers: keep the full height when the image is wider.
        if (static_cast<long long>(image.width) * H > static_cast<long long>(image.height) * W) {
            w = std::max(1, static_cast<int>(static_cast<long long>(image.height) * W / H));
            x0 = (image.width - w) / 2;
        } else {
            h = std::max(1, static_cast<int>(static_cast<long long>(image.width) * H / W));
            y0 = (image.height - h) / 2;
        }
    }
    const auto xs = taps(x0, w, W), ys = taps(y0, h, H);
    const int ic = image.channels;
    const std::uint8_t* px = image.pixels.data();
    // The value of source pixel (x, y) in output channel c, after channel conversion.
    auto value = [&](int x, int y, int c) -> float {
        const std::uint8_t* p = px + (static_cast<std::size_t>(y) * image.width + x) * ic;
        if (ic == C) return p[c];
        if (ic == 1) return p[0];                          // grey -> RGB
        return 0.299f * p[0] + 0.587f * p[1] + 0.114f * p[2];  // RGB -> grey
    };
    const std::size_t plane = static_cast<std::size_t>(H) * W;
    for (int c = 0; c < C; ++c) {
        for (int y = 0; y < H; ++y) {
            const Tap ty = ys[static_cast<std::size_t>(y)];
            for (int x = 0; x < W; ++x) {
                const Tap tx = xs[static_cast<std::size_t>(x)];
                const float top = value(tx.lo, ty.lo, c) * (1 - tx.w) + value(tx.hi, ty.lo, c) * tx.w;
                const float bottom = value(tx.lo, ty.hi, c) * (1 - tx.w) + value(tx.hi, ty.hi, c) * tx.w;
                // Weights summing to 1 in floats can lift 255 to 255.00002 (fuzz_image found it):
                // clamp, so every input stays in [0, 1] as the scaler promises.
                const float v = std::min(top * (1 - ty.w) + bottom * ty.w, 255.0f);
                // Divide rather than multiply by 1/255: 255 must map to exactly 1.0f, as IDX does.
                out[static_cast<std::size_t>(c) * plane + static_cast<std::size_t>(y) * W + x] = v / 255.0f;
            }
        }
    }
}

}  // namespace thresher::data
