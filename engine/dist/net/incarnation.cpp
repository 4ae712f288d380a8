#include "dist/net/incarnation.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace thresher::dist {

std::string incarnation_file() {
    namespace fs = std::filesystem;
    fs::path dir;
    if (const char* d = std::getenv("THRESHER_STATE_DIR"); d && *d)
        dir = d;
    else if (const char* x = std::getenv("XDG_STATE_HOME"); x && *x)
        dir = fs::path(x) / "thresher";
    else if (const char* h = std::getenv("HOME"); h && *h)
        dir = fs::path(h) / ".local" / "state" / "thresher";
    else
        return {};
    return (dir / "incarnation").string();
}

std::uint64_t next_incarnation(const std::string& file, std::uint64_t now_ns) {
    const std::uint64_t fallback = now_ns > 0 ? now_ns : 1;
    if (file.empty()) return fallback;
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(file).parent_path(), ec);
    const int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return fallback;
    std::uint64_t next = fallback;
    if (::flock(fd, LOCK_EX) == 0) {
        char text[32] = {};
        const auto n = ::pread(fd, text, sizeof text - 1, 0);
        std::uint64_t last = 0;
        if (n > 0) last = std::strtoull(text, nullptr, 10);
        if (last != UINT64_MAX && last + 1 > next) next = last + 1;
        const std::string out = std::to_string(next) + "\n";
        if (::pwrite(fd, out.data(), out.size(), 0) == static_cast<ssize_t>(out.size())) {
            (void)::ftruncate(fd, static_cast<off_t>(out.size()));
            (void)::fsync(fd);
        }
        ::flock(fd, LOCK_UN);
    }
    ::close(fd);
    return next;
}

std::uint64_t new_incarnation() {
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::system_clock::now().time_since_epoch()).count();
    return next_incarnation(incarnation_file(), ns > 0 ? static_cast<std::uint64_t>(ns) : 1);
}

}  // namespace thresher::dist
