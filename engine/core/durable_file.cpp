#include "core/durable_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"

namespace thresher {

namespace {

std::string why(int err) { return std::strerror(err); }

// The process umask without changing it (umask() would race with other threads creating files):
// model files get the permissions an ordinary create would give them, not mkstemp's 0600.
mode_t current_umask() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
    return 077;  // unknown: the safe choice
}

class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() { if (fd_ >= 0) ::close(fd_); }
    int get() const { return fd_; }
    // Closes now and reports the error close() gives (deferred write errors surface here).
    int close() {
        const int fd = fd_;
        fd_ = -1;
        return ::close(fd) == 0 ? 0 : errno;
    }

private:
    int fd_;
};

}  // namespace

std::uint32_t crc32_of(const void* data, std::size_t size, std::uint32_t crc) {
    // crc32_z takes a size_t length; it is in every zlib since 1.2.9.
    return static_cast<std::uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), size));
}

void write_file_durably(const std::string& path, std::string_view bytes) {
    const std::filesystem::path target(path);
    if (target.filename().empty()) throw Error(path + ": not a file name");
    const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
    // Hidden, beside the target, unique: ".model.thr.XXXXXX".
    std::string hidden = ".";
    hidden += target.filename().string();
    hidden += ".XXXXXX";
    const std::string templ = (folder / hidden).string();
    std::vector<char> name(templ.begin(), templ.end());
    name.push_back('\0');
    Fd fd(::mkostemp(name.data(), O_CLOEXEC));
    if (fd.get() < 0) throw Error(path + ": cannot create a temporary file in " + folder.string() + " (" + why(errno) + ")");
    const std::string tmp(name.data());
    auto fail = [&](const std::string& step, int err) {
        ::unlink(tmp.c_str());
        throw Error(path + ": " + step + " failed (" + why(err) + ")");
    };
    if (::fchmod(fd.get(), 0666 & ~current_umask()) != 0) fail("setting permissions", errno);
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail("write", errno);
        done += static_cast<std::size_t>(n);
    }
    if (::fsync(fd.get()) != 0) fail("fsync", errno);
    if (const int err = fd.close()) fail("close", err);
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename into place", errno);
    // The rename is durable only once the folder is: a power cut could otherwise bring back the
    // old file (or none) even though the new one's data is on disk.
    Fd dir(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.get() < 0 || ::fsync(dir.get()) != 0)
        throw Error(path + ": written, but syncing its folder " + folder.string() + " failed (" + why(errno) + ")");
}

}  // namespace thresher
