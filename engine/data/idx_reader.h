// Reader for IDX files, the container format of MNIST and Fashion-MNIST.
//
// Layout: 2 zero bytes, a type byte (0x08 = unsigned byte), a dimension count, then one
// big-endian uint32 per dimension, then the elements in row-major order. The train images of
// Fashion-MNIST are  00 00 08 03 | 60000 | 28 | 28 | 47,040,000 bytes  (16-byte header).
// Files may be gzip-compressed (the usual download); the reader accepts both forms unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace thresher::data {

struct IdxArray {
    std::vector<std::uint32_t> dims;
    std::vector<std::uint8_t> data;  // product(dims) elements, row-major

    std::size_t element_count() const;
};

// Reads a plain or gzip-compressed IDX file. Throws thresher::DataError ("<file>: <place>:
// <problem>") for anything that is not a complete, well-formed unsigned-byte IDX file.
IdxArray read_idx(const std::string& path);

// The same parser over bytes already in memory (uncompressed IDX only); `name` stands in for
// the file name in messages. Used by the fuzzer and by tests that build files in memory.
IdxArray parse_idx(const std::uint8_t* bytes, std::size_t size, const std::string& name);

// The bytes of an uncompressed IDX file holding `array` (tests, and writing small fixtures).
std::vector<std::uint8_t> encode_idx(const IdxArray& array);

}  // namespace thresher::data
