// The per-format decoders behind decode_image (image_decoder.cpp): internal to engine/data/image.
// Each checks the header's size with check_image_size before allocating and throws DataError
// "<name>: <FORMAT>: <problem>".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "data/image/image.h"

namespace thresher::data::decoders {

Image decode_jpeg(const std::uint8_t* bytes, std::size_t size, const std::string& name, const ImageLimits&);
Image decode_png(const std::uint8_t* bytes, std::size_t size, const std::string& name, const ImageLimits&);
Image decode_webp(const std::uint8_t* bytes, std::size_t size, const std::string& name, const ImageLimits&);
Image decode_bmp(const std::uint8_t* bytes, std::size_t size, const std::string& name, const ImageLimits&);

}  // namespace thresher::data::decoders
