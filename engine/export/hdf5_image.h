// An HDF5 file built in memory with libhdf5's C API (the "core" driver without a backing store),
// so an export writes it durably in one piece (core/durable_file.h) or puts it in a zip, and no
// half-written .h5 ever sits on disk. Only what Keras's files hold: groups, float32 datasets,
// and string attributes written as h5py writes numpy bytes (fixed-length, null-padded).
//
//   Hdf5Image h5("lenet.h5");
//   h5.group("model_weights/conv2d/conv2d");
//   h5.floats("model_weights/conv2d/conv2d/kernel:0", {5, 5, 1, 20}, values);
//   h5.string_attribute("/", "keras_version", "2.15.0");
//   std::string bytes = h5.finish();
//
// libhdf5 runs in the exporting process: it reads nothing here, only writes what we give it
// (the engine reads foreign HDF5 files in thresher-hdf5-reader, a process of its own).
// Any failing call throws an ExportError naming the call and the object. Written in HDF5's
// earliest format (h5py's default): an attribute holds at most kMaxAttributeBytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace thresher::model_export {

class Hdf5Image {
public:
    // Keras's HDF5_OBJECT_HEADER_LIMIT: what one attribute may take in an object header.
    static constexpr std::size_t kMaxAttributeBytes = 64512;

    explicit Hdf5Image(std::string what);  // `what` names the file in messages
    ~Hdf5Image();
    Hdf5Image(const Hdf5Image&) = delete;
    Hdf5Image& operator=(const Hdf5Image&) = delete;

    // Creates the group and any missing groups above it.
    void group(const std::string& path);
    void floats(const std::string& path, const std::vector<std::uint64_t>& dims, const std::vector<float>& values);
    // A scalar string, as h5py writes `attrs[name] = text.encode("utf8")`.
    void string_attribute(const std::string& object, const std::string& name, const std::string& value);
    // A 1-D array of strings, as h5py writes a numpy array of bytes; an empty list is an empty
    // float64 array, as h5py writes numpy's np.array([]) (Keras's weight_names of a layer
    // without weights). Each entry takes `width` bytes (0: the longest entry's).
    void strings_attribute(const std::string& object, const std::string& name, const std::vector<std::string>& values,
                           std::size_t width = 0);
    // Closes the file and returns its bytes; the image is unusable afterwards.
    std::string finish();

private:
    void check(std::int64_t status, const char* call, const std::string& object) const;
    void attribute(const std::string& object, const std::string& name, std::int64_t type, std::int64_t space, const void* data);
    std::string what_;
    std::int64_t file_ = -1, link_props_ = -1;  // libhdf5 ids (hid_t)
};

}  // namespace thresher::model_export
