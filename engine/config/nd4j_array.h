// ND4J's binary array format, as DL4J's ModelSerializer writes coefficients.bin and
// updaterState.bin (Nd4j.write): two DataBuffers back to back, the shape information and the data.
//
// A DataBuffer (big-endian, Java DataOutputStream):
//   UTF   allocation mode   Java "modified UTF-8": u16 byte count, then the bytes
//         ("HEAP", "DIRECT", "JAVACPP" before 1.0: the length that follows is an i32;
//          "LONG_SHAPE", "MIXED_DATA_TYPES" from 1.0: an i64)
//   i32/i64 length          number of elements
//   UTF   data type         "FLOAT", "DOUBLE", "HALF", "INT", "LONG", ...
//   length elements         big-endian, of that type
// The shape buffer (INT before 1.0, LONG after) holds
//   [rank, shape[0..rank), stride[0..rank), offset-or-extras, element-wise stride, order]
// with order 99 ('c', row-major) or 102 ('f', column-major); the data buffer then holds
// prod(shape) values in that order. Worked example, a 1x3 float row vector saved by 1.0.0-beta7:
//   "LONG_SHAPE" 8 "LONG" [2, 1,3, 3,1, 0, 1, 99]   "MIXED_DATA_TYPES" 3 "FLOAT" [a, b, c]
//
// Every count is checked against the bytes that are really there before anything is allocated,
// so a truncated or lying file is an error naming the place, never a huge allocation.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace thresher::config {

struct Nd4jArray {
    std::vector<std::int64_t> shape;
    char order = 'c';
    std::vector<float> data;  // prod(shape) values in `order`; doubles and halves converted
    std::string data_type;    // as the file names it ("FLOAT", "DOUBLE", ...)

    std::size_t size() const { return data.size(); }
    std::string shape_str() const;  // "[1, 431080]"
};

// Reads one array from the start of `bytes`; `source` names the file (and entry) in messages.
// `consumed`, when given, receives the number of bytes the array took. Throws ConfigError.
Nd4jArray read_nd4j_array(std::span<const std::uint8_t> bytes, const std::string& source,
                          std::size_t* consumed = nullptr);

}  // namespace thresher::config
