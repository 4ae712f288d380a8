// Running thresher-hdf5-reader (engine/hdf5_reader/) on a file image: posix_spawn, never fork.
// The app and the engine have threads when they read a model, and a fork()ed child of a
// multithreaded process may call only async-signal-safe functions until it execs: libhdf5 or
// malloc there could wait forever on a lock another thread held at the fork (the user then saw a
// bogus "took longer than 120 s"). posix_spawn execs at once (glibc: clone(CLONE_VFORK), no
// allocation in the child), and the helper starts as a fresh program.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace thresher::config {

struct Hdf5ReaderLimits {
    std::uint64_t output_bytes = 0;  // more on the helper's stdout is a damaged file
    int seconds = 0;                 // for everything: start, image in, snapshot out, exit
};

// Starts `program` with the image on its stdin and returns everything it wrote on its stdout,
// once it has exited 0. The image goes in while the snapshot comes out (one socket, polled both
// ways, so neither side blocks on a full buffer). Every other descriptor of this process is closed
// in the child. On any problem the helper is killed and reaped, and a ConfigError says, in the
// user's terms, "<source>: libhdf5 crashed reading the file (signal N): ...", "... took longer
// than S s ...", "... could not read the file (exit N)", or that the helper could not start.
std::vector<std::uint8_t> run_hdf5_reader(const std::string& program, std::span<const std::uint8_t> image,
                                          const Hdf5ReaderLimits& limits, const std::string& source);

}  // namespace thresher::config
