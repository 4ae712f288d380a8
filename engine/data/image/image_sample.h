// An Image made into one sample of a model's input: channels converted, optionally centre-
// cropped, resized, scaled to [0, 1] and laid out CHW (data/dataset.h).
//
//   channels   grey -> RGB copies the grey value into R, G and B; RGB -> grey is the luma
//              0.299 R + 0.587 G + 0.114 B (ITU-R BT.601, OpenCV's cvtColor, which DL4J's
//              NativeImageLoader uses).
//   fit        stretch: the whole image resized to H x W (aspect ratio not kept);
//              crop: the largest centred region with the target's aspect ratio, then resized
//              (a 40x30 image to 20x20 keeps its centre 30x30).
//   resize     bilinear with pixel centres aligned (OpenCV's INTER_LINEAR): an image already
//              H x W is copied unchanged.
//   scale      value / 255, as DL4J's ImagePreProcessingScaler(0, 1): 255 -> exactly 1.0.
#pragma once

#include <string_view>

#include "data/dataset.h"
#include "data/image/image.h"

namespace thresher::data {

enum class ImageFit { Stretch, Crop };

// "stretch" | "crop"; throws ConfigError naming `what` (the option; "" leaves it out) otherwise.
ImageFit parse_image_fit(std::string_view text, std::string_view what);
const char* to_string(ImageFit);

// Writes shape.size() floats to `out`. shape.channels must be 1 or 3 (ConfigError otherwise).
void image_to_sample(const Image& image, const SampleShape& shape, ImageFit fit, float* out);

}  // namespace thresher::data
