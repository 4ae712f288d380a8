// Training-time image augmentation (issue 24), as a user writes it on the command line
// (`--augment crop:4,flip`) and in run specs ("augment": "crop:4,flip"): a random crop after
// zero padding of `crop_padding` pixels on every side (CIFAR's "pad 4, crop 32") and a
// horizontal flip with probability 1/2. Applied per training sample by data::augment_sample.
#pragma once

#include <string>
#include <string_view>

namespace thresher::spec {

struct Augmentation {
    int crop_padding = 0;  // 0: no random crop
    bool flip = false;

    bool active() const { return crop_padding > 0 || flip; }
    // "none", or comma-separated parts "crop:P" (P in 1..64) and "flip", each at most once.
    // Throws thresher::ConfigError quoting the text and saying what is expected.
    static Augmentation parse(std::string_view text);
    // The text parse() reads back ("none" when inactive).
    std::string text() const;

    bool operator==(const Augmentation&) const = default;
};

}  // namespace thresher::spec
