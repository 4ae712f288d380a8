// Decodes JPEG, PNG, WebP and BMP files into Images, with Debian's libraries for the first three
// (libjpeg-turbo, libpng, libwebp) and a small bounded parser for BMP (bmp_decoder.cpp says why).
//
// The format is recognised by the file's first bytes, not its name ("cat.png" holding a JPEG
// decodes as JPEG). Every failure is a thresher::DataError naming the file and what is wrong
// ("<name>: JPEG: Premature end of JPEG file"), never a crash or an exit(): libjpeg's and
// libpng's default error handlers call exit() or abort(), so each decoder installs its own.
// A truncated file is an error (libjpeg would otherwise fill the missing rows with grey).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "data/image/image.h"

namespace thresher::data {

enum class ImageFormat { Jpeg, Png, WebP, Bmp };

const char* to_string(ImageFormat);

// The format the bytes start with, or nullopt when they are none of the four.
std::optional<ImageFormat> sniff_image_format(const std::uint8_t* bytes, std::size_t size);

// True for the file names an image folder reads: .jpg .jpeg .png .webp .bmp (any case).
bool has_image_extension(const std::string& filename);

// Decodes bytes already in memory; `name` stands in for the file in messages.
Image decode_image(const std::uint8_t* bytes, std::size_t size, const std::string& name,
                   const ImageLimits& limits = {});

// Reads and decodes a file (at most limits.max_file_bytes of it).
Image read_image(const std::string& path, const ImageLimits& limits = {});

}  // namespace thresher::data
