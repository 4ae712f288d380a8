// Where thresher-hdf5-reader (engine/hdf5_reader/) is: the program that runs libhdf5 for
// hdf5_file.h. It is installed beside thresher-engine and the app, built beside them and the test
// suites in build/*/bin, and shipped beside the engine in the SSH launcher's bundle, so the
// running program's own folder comes first; then $THRESHER_HDF5_READER (a path, for packaging
// and tests that run a program from elsewhere), then $PATH.
#pragma once

#include <optional>
#include <string>

namespace thresher::config {

inline constexpr const char* kHdf5ReaderName = "thresher-hdf5-reader";
inline constexpr const char* kHdf5ReaderVariable = "THRESHER_HDF5_READER";

struct Hdf5ReaderPlaces {
    std::string program_dir;                  // the running program's folder; "" when unknown
    std::optional<std::string> override_path;  // $THRESHER_HDF5_READER, when set
    std::optional<std::string> search_path;    // $PATH, when set
};

// This process's places: /proc/self/exe's folder and the environment.
Hdf5ReaderPlaces hdf5_reader_places();

// The first executable file among the places, in their order. Throws ConfigError naming every
// place it looked and what to do.
std::string find_hdf5_reader(const Hdf5ReaderPlaces& places);

}  // namespace thresher::config
