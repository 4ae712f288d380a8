#include "data/augment.h"

#include <algorithm>

#include "core/rng.h"

namespace thresher::data {

namespace {
constexpr std::uint64_t kAugmentPurpose = 0x4155474d;  // "AUGM"
}  // namespace

void augment_sample(float* chw, const SampleShape& shape, const spec::Augmentation& a, std::uint64_t seed, int epoch,
                    std::size_t index, std::vector<float>& scratch) {
    if (!a.active()) return;
    // One stream per (epoch, sample): the crop offsets first, then the flip.
    Rng rng(derive_seed(derive_seed(seed, kAugmentPurpose, static_cast<std::uint64_t>(epoch)), index));
    const int h = shape.height, w = shape.width, p = a.crop_padding;
    int dy = 0, dx = 0;  // the crop's offset from the unpadded image, in [-p, p]
    if (p > 0) {
        std::uniform_int_distribution<int> offset(0, 2 * p);
        dy = offset(rng) - p;
        dx = offset(rng) - p;
    }
    const bool flip = a.flip && std::uniform_int_distribution<int>(0, 1)(rng) == 1;
    if (dy == 0 && dx == 0 && !flip) return;
    const std::size_t plane = static_cast<std::size_t>(h) * w;
    scratch.assign(chw, chw + plane * shape.channels);
    for (int c = 0; c < shape.channels; ++c) {
        const float* src = scratch.data() + plane * c;
        float* dst = chw + plane * c;
        for (int y = 0; y < h; ++y) {
            const int sy = y + dy;
            for (int x = 0; x < w; ++x) {
                // Output column x shows the cropped column x, or its mirror image.
                const int sx = (flip ? w - 1 - x : x) + dx;
                dst[static_cast<std::size_t>(y) * w + x] =
                    sy >= 0 && sy < h && sx >= 0 && sx < w ? src[static_cast<std::size_t>(sy) * w + sx] : 0.f;
            }
        }
    }
}

}  // namespace thresher::data
