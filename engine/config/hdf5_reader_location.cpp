#include "config/hdf5_reader_location.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace thresher::config {

namespace {

bool is_executable_file(const std::string& path) {
    struct stat st {};
    return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

Hdf5ReaderPlaces hdf5_reader_places() {
    Hdf5ReaderPlaces places;
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) places.program_dir = exe.parent_path().string();
    if (const char* v = std::getenv(kHdf5ReaderVariable)) places.override_path = v;
    if (const char* v = std::getenv("PATH")) places.search_path = v;
    return places;
}

std::string find_hdf5_reader(const Hdf5ReaderPlaces& places) {
    std::vector<std::string> looked;
    if (!places.program_dir.empty()) {
        const std::string beside = places.program_dir + "/" + kHdf5ReaderName;
        if (is_executable_file(beside)) return beside;
        looked.push_back("not beside this program (" + beside + ")");
    } else {
        looked.push_back("not beside this program (its folder is unknown: no /proc/self/exe)");
    }
    if (places.override_path) {
        if (is_executable_file(*places.override_path)) return *places.override_path;
        looked.push_back(std::string(kHdf5ReaderVariable) + "=" + *places.override_path + " is not an executable file");
    } else {
        looked.push_back(std::string(kHdf5ReaderVariable) + " is not set");
    }
    if (places.search_path && !places.search_path->empty()) {
        std::string::size_type from = 0;
        for (;;) {
            const auto colon = places.search_path->find(':', from);
            std::string dir = places.search_path->substr(from, colon == std::string::npos ? std::string::npos : colon - from);
            // Absolute entries only: an empty or relative one names the current folder, and a
            // program found relative to wherever the user happens to be is not ours to run.
            if (!dir.empty() && dir.front() == '/' && is_executable_file(dir + "/" + kHdf5ReaderName))
                return dir + "/" + kHdf5ReaderName;
            if (colon == std::string::npos) break;
            from = colon + 1;
        }
        looked.push_back("not in $PATH (" + *places.search_path + ")");
    } else {
        looked.push_back("$PATH is not set");
    }
    std::string message = std::string(kHdf5ReaderName) + ", the program that reads HDF5 files for Thresher, was not found: ";
    for (std::size_t i = 0; i < looked.size(); ++i) message += (i ? "; " : "") + looked[i];
    message += ". Install it beside this program (Thresher's package does; in a build folder, build the " +
               std::string(kHdf5ReaderName) + " target) or set " + kHdf5ReaderVariable + " to its path";
    throw ConfigError(message);
}

}  // namespace thresher::config
