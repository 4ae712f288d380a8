// How much memory a data set may take, measured against the input it was built from.
//
// Headers and labels decide allocations: an IDX header names the element count, the largest
// class label decides the width of every one-hot target row. A file a few MB large must not make
// the engine allocate many GB: a single CSV label of 65535 in 500,000 short rows would ask for
// 500,000 x 65,536 floats (122 GiB). Real data sets stay far inside the budget: Fashion-MNIST's
// train set is 47 MB of pixels and 188 MB of features plus 2.4 MB of targets.
#pragma once

#include <cstdint>
#include <string>

namespace thresher::data {

// 1 GiB, or 64 times the input's size when that is more.
std::uint64_t memory_budget(std::uint64_t input_bytes);

// Throws DataError "<name>: <what> would take <size>, more than the <budget> allowed for
// <input_bytes> bytes of input" when `bytes` exceeds memory_budget(input_bytes). `what` says
// what would be allocated and why, in the user's terms (rows, classes, the label that set them).
void check_memory_budget(const std::string& name, const std::string& what, std::uint64_t bytes,
                         std::uint64_t input_bytes);

}  // namespace thresher::data
