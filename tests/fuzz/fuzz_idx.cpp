// libFuzzer target for the IDX parser: any byte string must give an IdxArray or a
// thresher::Error, never a crash, a sanitizer report or an unbounded allocation.
// Inputs starting with the gzip magic also go through a file and zlib, the path real data takes.
#include "core/error.h"
#include "data/idx_dataset.h"
#include "data/idx_reader.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

// One scratch file per fuzzing process, removed when libFuzzer exits normally.
struct ScratchFile {
    std::string path = "/tmp/thresher-fuzz-idx-" + std::to_string(::getpid()) + ".gz";
    ~ScratchFile() { std::remove(path.c_str()); }
};

void check(const thresher::data::IdxArray& a) {
    if (a.data.size() != a.element_count()) __builtin_trap();
    // Use the array as both images and labels: exercises the pairing checks too.
    try {
        (void)thresher::data::make_idx_dataset(a, "images", a, "labels");
    } catch (const thresher::Error&) {
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    try {
        check(thresher::data::parse_idx(data, size, "fuzz"));
    } catch (const thresher::Error&) {
    }
    if (size >= 2 && data[0] == 0x1f && data[1] == 0x8b) {
        static const ScratchFile scratch;
        const std::string& path = scratch.path;
        if (std::FILE* f = std::fopen(path.c_str(), "wb")) {
            std::fwrite(data, 1, size, f);
            std::fclose(f);
            try {
                check(thresher::data::read_idx(path));
            } catch (const thresher::Error&) {
            }
        }
    }
    return 0;
}
