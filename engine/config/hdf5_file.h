// Reading HDF5 files held in memory through libhdf5's C API (the core driver over a file image):
// Keras's model.save("m.h5") (a model_config attribute and model_weights groups) and the
// model.weights.h5 inside a Keras 3 .keras archive. Only what the Keras importer needs: string
// attributes, group members and float datasets.
//
// libhdf5 is not hardened against damaged files: fuzzing found heap overflows inside it (1.10.8,
// H5O__msg_iterate_real on a corrupt attribute message). So the library never runs in this
// process, nor in anything forked from it: thresher-hdf5-reader (engine/hdf5_reader/), a program
// of its own found beside this one (hdf5_reader_location.h), is started with posix_spawn
// (hdf5_reader_process.h), reads the image on its stdin, walks it (hard links only, never
// external files; bounded depth, object count and values; address space capped) and writes a
// snapshot of its groups, string attributes and float datasets on its stdout
// (hdf5_reader/snapshot.h), which is parsed here with every size checked. A crash, a hang past
// kChildSeconds or a failure there becomes a ConfigError naming the file.
//
// Why a program and not fork() alone, as before: the app and the engine have threads when they
// read a model, and a forked child of a multithreaded process may only call async-signal-safe
// functions until it execs. libhdf5 and malloc in such a child could block for ever on a lock
// another thread held at the fork (the user then saw a bogus "took longer than 120 s" error).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace thresher::config {

class Hdf5File {
public:
    // `image` is sent to thresher-hdf5-reader. Throws ConfigError when it is no HDF5 file, when
    // libhdf5 cannot read it, or when thresher-hdf5-reader cannot be found or started.
    Hdf5File(std::span<const std::uint8_t> image, std::string source);
    ~Hdf5File();
    Hdf5File(const Hdf5File&) = delete;
    Hdf5File& operator=(const Hdf5File&) = delete;

    const std::string& source() const { return source_; }
    // Whether the object at `path` ("model_weights/dense_1/dense_1/kernel:0") exists.
    bool exists(const std::string& path) const;
    // Names of the members of the group at `path` ("" or "/" is the root), in name order.
    std::vector<std::string> members(const std::string& path) const;
    // A string attribute of the object at `path` (fixed or variable length, as h5py writes
    // them); nothing when absent. A string array gives its elements (layer_names, weight_names).
    std::optional<std::vector<std::string>> strings(const std::string& path, const std::string& attribute) const;
    std::optional<std::string> string(const std::string& path, const std::string& attribute) const;

    struct Floats {
        std::vector<std::uint64_t> dims;  // row-major (C order, as numpy writes)
        std::vector<float> data;
        std::string dims_str() const;     // "[3, 3, 1, 8]"
    };
    // A floating-point dataset, converted to float. Throws ConfigError naming `path`.
    Floats floats(const std::string& path) const;

    // Deadline for thresher-hdf5-reader, start to exit (a damaged file may make libhdf5 loop).
    static constexpr int kChildSeconds = 120;

private:
    [[noreturn]] void fail(const std::string& path, const std::string& what) const;
    struct Snapshot;
    std::unique_ptr<Snapshot> snap_;
    std::string source_;
};

// True when `bytes` start with HDF5's signature (a superblock at offset 0).
bool looks_like_hdf5(std::span<const std::uint8_t> bytes);

}  // namespace thresher::config
