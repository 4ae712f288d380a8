// What thresher-hdf5-reader does with libhdf5: open a file image with the core driver and write
// a snapshot (snapshot.h) of its groups, string attributes and float datasets. Hard links only,
// never external files; depth, object count and values bounded by the image's size.
#pragma once

#include <cstdint>
#include <span>

#include "hdf5_reader/snapshot.h"

namespace thresher::hdf5_reader {

// Writes the records of `image` and the end record. A file libhdf5 cannot open is an Unreadable
// record, not an error. Throws what the writer's sink throws, and std::bad_alloc.
void snapshot_image(std::span<const std::uint8_t> image, hdf5_snapshot::Writer& out);

}  // namespace thresher::hdf5_reader
