// Shard sets for the data suites: a small IDX folder and the export command's steps (train,
// test, index) without the command line, so a suite exports in-process.
#pragma once

#include "data/data_source.h"
#include "data/idx_reader.h"
#include "data/shard_writer.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace shard_fixture {

using namespace thresher::data;

inline void write_file(const std::string& path, const std::string& bytes) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_idx(const std::string& path, std::vector<std::uint32_t> dims, std::vector<std::uint8_t> data) {
    IdxArray a;
    a.dims = std::move(dims);
    a.data = std::move(data);
    const auto bytes = encode_idx(a);
    write_file(path, std::string(bytes.begin(), bytes.end()));
}

// An IDX folder: 61 train and 13 test images of 3x3, pixels and labels varying per sample.
inline void write_idx_folder(const std::string& dir) {
    for (auto [prefix, n] : {std::pair{"train", 61u}, {"t10k", 13u}}) {
        std::vector<std::uint8_t> pixels, labels;
        for (std::uint32_t i = 0; i < n * 9; ++i) pixels.push_back(std::uint8_t((i * 37 + n) % 256));
        for (std::uint32_t i = 0; i < n; ++i) labels.push_back(std::uint8_t((i * 7) % 10));
        write_idx(dir + "/" + prefix + "-images-idx3-ubyte", {n, 3, 3}, pixels);
        write_idx(dir + "/" + prefix + "-labels-idx1-ubyte", {n}, labels);
    }
}

// Exports `split` as the export command does, by default in batches of 8 in 3 shards.
inline ShardIndex export_split(const DataSplit& split, const std::string& out, std::uint32_t batch = 8, std::size_t shards = 3,
                               std::uint64_t seed = 5) {
    return write_shard_set(split, out, split.train.name, {.batch = batch, .shards = shards, .seed = seed, .progress = {}});
}

}  // namespace shard_fixture
