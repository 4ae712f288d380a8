// ND4J's binary array format (Nd4j.write), as DL4J 1.0's ModelSerializer writes coefficients.bin
// and updaterState.bin: the inverse of config/nd4j_array.h's reader, for one row vector [1, N]
// of FLOAT in 'c' order. Big-endian throughout (Java's DataOutputStream):
//   UTF "LONG_SHAPE"        u16 length + bytes (Java's modified UTF-8; ASCII here)
//   i64 8                   values in the shape information
//   UTF "LONG"
//   i64 x 8                 [rank 2, 1, N, stride N, 1, extras 8192, element-wise stride 1, order 99]
//   UTF "MIXED_DATA_TYPES"
//   i64 N
//   UTF "FLOAT"
//   f32 x N                 IEEE 754 bits, big-endian
// extras 8192 is libnd4j's ARRAY_FLOAT flag (ArrayOptions: the data type kept in the shape
// information since 1.0.0-beta); Thresher's reader ignores that slot, DL4J reads its type from it.
// Worked example, {1.5f} (127 bytes): 00 0a "LONG_SHAPE", i64 8, 00 04 "LONG", the i64s
// [2, 1, 1, 1, 1, 8192, 1, 99], 00 10 "MIXED_DATA_TYPES", i64 1, 00 05 "FLOAT", 3f c0 00 00.
#pragma once

#include <span>
#include <string>

namespace thresher::model_export {

std::string nd4j_row_bytes(std::span<const float> values);

}  // namespace thresher::model_export
