// libFuzzer target for Thresher's own model file (engine/nn/model_file.h), which `--resume`,
// `evaluate`, `predict` and `compare` read from wherever the user points: any bytes either load
// as a model whose parameters match its config, or throw thresher::Error naming the file -- never
// a crash, a sanitizer report, another exception or an allocation larger than the file.
// The input's first byte steers the harness; the rest is the file. A random file almost never
// carries the right CRC-32, so when that byte is odd the harness writes the right one over the
// file's last 4 bytes: that drives the fuzzer past the checksum into the header and the arrays.
// Seed: a file written by `thresher-engine train --save`, with one byte in front.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/durable_file.h"
#include "core/error.h"
#include "nn/model_file.h"

namespace {

// load_model_file reads a path: the input goes to a memory file, read back through /proc.
struct MemoryFile {
    int fd = ::memfd_create("fuzz_model_file", 0);
    std::string path = "/proc/self/fd/" + std::to_string(fd);
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const MemoryFile file;
    if (size < 1 || file.fd < 0) return 0;
    std::vector<std::uint8_t> bytes(data + 1, data + size);
    if ((data[0] & 1) && bytes.size() >= 4) {
        const std::uint32_t crc = thresher::crc32_of(bytes.data(), bytes.size() - 4);
        std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
    }
    if (::ftruncate(file.fd, 0) != 0 || ::pwrite(file.fd, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
        __builtin_trap();
    try {
        const auto m = thresher::nn::load_model_file(file.path);
        if (m.params.size() != m.config.param_count()) __builtin_trap();
        if ((m.params.size() + m.updater_state.size()) * sizeof(float) > bytes.size()) __builtin_trap();
    } catch (const thresher::Error&) {
    }
    return 0;
}
