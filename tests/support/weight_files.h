// Writers for model files with weights, for suites that need real ones (engine/config's mapping
// tests, the engine's command-line tests): ND4J's binary array written by following its documented
// layout (independent of engine/config/nd4j_array.cpp, the reader under test), zips through
// libzip and HDF5 files through libhdf5, as DL4J's ModelSerializer and Keras write them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace test_support {

using Bytes = std::vector<std::uint8_t>;

// Java's DataOutputStream: big-endian; writeUTF = a u16 byte count and the bytes.
struct JavaOut {
    Bytes b;
    void be(std::uint64_t v, int n);
    void utf(const std::string& s);
    void f32(float v);
    void f64(double v);
};

// Nd4j.write of a [1, n] row vector: 1.0 style (LONG_SHAPE / MIXED_DATA_TYPES, long lengths, LONG
// shape) or 0.x style (HEAP, int lengths, INT shape), with FLOAT or DOUBLE data.
Bytes nd4j_row(const std::vector<float>& v, bool legacy, bool doubles);

// A zip of (name, bytes) entries; throws std::runtime_error when libzip fails.
void write_zip(const std::string& path, const std::vector<std::pair<std::string, Bytes>>& entries);

Bytes read_bytes(const std::string& path);
// A JSON file (a model config, an .expected.json reference); std::runtime_error naming it when unreadable.
nlohmann::json read_json_file(const std::string& path);
void write_bytes(const std::string& path, const Bytes& b);
Bytes text_bytes(const std::string& s);

// A small HDF5 writer (libhdf5's C API), intermediate groups created as needed.
class H5Writer {
public:
    explicit H5Writer(const std::string& path);
    ~H5Writer();
    H5Writer(const H5Writer&) = delete;
    H5Writer& operator=(const H5Writer&) = delete;
    void group(const std::string& path);
    void dataset(const std::string& path, const std::vector<unsigned long long>& dims, const std::vector<float>& v);
    // As h5py writes numpy bytes: fixed-length strings, a scalar or a 1-D array; `variable`: as
    // h5py writes a Python str (variable-length UTF-8).
    void strings(const std::string& object, const std::string& name, const std::vector<std::string>& values, bool scalar,
                 bool variable = false);
    // An empty float64 array, as Keras writes weight_names for a layer without weights.
    void empty_floats(const std::string& object, const std::string& name);
    // One Keras layer's weights, as Keras's HDF5 saving lays them out: group `group`, a dataset
    // group/layer/NAME:0 per variable, and the group's weight_names attribute listing them.
    using Variable = std::pair<std::string, std::pair<std::vector<unsigned long long>, std::vector<float>>>;
    void keras_layer(const std::string& group, const std::string& layer, const std::vector<Variable>& variables);

private:
    // Writes attribute `name` of `object` and closes `type` and `space` (libhdf5 ids).
    void write_attribute(const std::string& object, const std::string& name, long long type, long long space,
                         const void* data);
    long long file_ = -1, lcpl_ = -1;
};

}  // namespace test_support
