// thresher-hdf5-reader: libhdf5 in a process of its own, for engine/config/hdf5_file.cpp.
//
//   thresher-hdf5-reader --max-bytes N --seconds S  < file.h5  > snapshot
//
// Reads an HDF5 file image on stdin (more than N bytes is refused), walks it (walker.h) and writes
// the snapshot (snapshot.h) on stdout. libhdf5 is not hardened against damaged files (heap
// overflows, 3.4e15-byte allocations, loops), so it never runs inside the app or the engine.
// It used to run in a child made with fork() and no exec, which a multithreaded parent must not
// do: malloc and libhdf5 in the child could wait forever on a lock another thread held at the
// fork. A fresh program has no such state. Exit statuses: hdf5_snapshot::kExit*.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <vector>

#include "hdf5_reader/snapshot.h"
#include "hdf5_reader/walker.h"

#if defined(__SANITIZE_ADDRESS__)
#define THRESHER_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define THRESHER_UNDER_ASAN 1
#endif
#endif

#ifdef THRESHER_HDF5_READER_ASAN_OPTIONS
// Under the asan and fuzz presets (engine/hdf5_reader/CMakeLists.txt): cmake/asan.supp for
// libhdf5's own overflow, and a null from malloc for libhdf5's requests past 2 GiB, as the
// release build's address-space cap gives it (ASan would end the process on the absurd ones, and
// take seconds to map and poison the 4 GB ones fuzzing finds). ASAN_OPTIONS still overrides these.
extern "C" const char* __asan_default_options() { return THRESHER_HDF5_READER_ASAN_OPTIONS; }
#endif

namespace {

namespace snap = thresher::hdf5_snapshot;

struct WriteFailed {};

void write_all(int fd, std::span<const std::uint8_t> bytes) {
    const std::uint8_t* p = bytes.data();
    std::size_t n = bytes.size();
    while (n) {
        const ssize_t k = ::write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) throw WriteFailed{};
        p += k;
        n -= static_cast<std::size_t>(k);
    }
}

bool parse_count(const char* text, std::uint64_t& out) {
    if (!text || !*text || *text == '-') return false;
    char* end = nullptr;
    errno = 0;
    out = std::strtoull(text, &end, 10);
    return errno == 0 && *end == '\0';
}

// All of stdin, or false when it holds more than `max` bytes (or cannot be read).
bool read_image(std::uint64_t max, std::vector<std::uint8_t>& image) {
    image.resize(static_cast<std::size_t>(max) + 1);  // one byte more tells a longer input
    std::size_t have = 0;
    for (;;) {
        const ssize_t k = ::read(0, image.data() + have, image.size() - have);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) return false;
        if (k == 0) break;
        have += static_cast<std::size_t>(k);
        if (have > max) return false;
    }
    image.resize(have);
    return true;
}

// libhdf5 allocates what a damaged header says (fuzzing saw 3.4e15-byte requests). Cap the
// address space at what this process has plus room for this file (libhdf5's image copy, the
// floats and the snapshot, each about the file's size, plus 2 GiB), so such a request fails here
// instead of reaching the machine's memory. Not under AddressSanitizer, whose shadow mappings an
// address-space limit would break (allocator_may_return_null does the job there).
void limit_memory(std::uint64_t image_size) {
#ifdef THRESHER_UNDER_ASAN
    (void)image_size;
#else
    std::uint64_t pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        unsigned long long v = 0;
        if (std::fscanf(f, "%llu", &v) == 1) pages = v;
        std::fclose(f);
    }
    const std::uint64_t have = pages * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    const auto cap = static_cast<rlim_t>(have + (std::uint64_t{2} << 30) + 16 * image_size);
    const rlimit r{cap, cap};
    ::setrlimit(RLIMIT_AS, &r);
#endif
}

int usage(const char* problem) {
    std::fprintf(stderr, "thresher-hdf5-reader: %s\nusage: thresher-hdf5-reader --max-bytes N --seconds S < file.h5 > snapshot\n",
                 problem);
    return snap::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
    // A crash in here is libhdf5's on a damaged file, and the program that started us reports it
    // (signal N): the default action, not a sanitizer's handler, which would report libhdf5's
    // fault as a finding (and exit with a status instead of the signal).
    for (const int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::signal(s, SIG_DFL);

    std::uint64_t max_bytes = 0, seconds = 0;
    bool have_max = false, have_seconds = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
        if (a == "--max-bytes" && parse_count(value, max_bytes)) have_max = true;
        else if (a == "--seconds" && parse_count(value, seconds) && seconds > 0 && seconds < 86400) have_seconds = true;
        else return usage(("bad argument " + a).c_str());
        ++i;
    }
    if (!have_max || !have_seconds) return usage("--max-bytes and --seconds are required");

    // Backstops for when the parent is gone and cannot kill us: its death kills us (Linux), and
    // so does the parent's own deadline (SIGALRM's default action), even if libhdf5 loops.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    ::alarm(static_cast<unsigned>(seconds));

    std::vector<std::uint8_t> image;
    if (!read_image(max_bytes, image)) {
        std::fprintf(stderr, "thresher-hdf5-reader: stdin holds more than %llu bytes or cannot be read\n",
                     static_cast<unsigned long long>(max_bytes));
        return snap::kExitInput;
    }
    limit_memory(image.size());
    int status = 0;
    try {
        snap::Writer out([](std::span<const std::uint8_t> bytes) { write_all(1, bytes); });
        thresher::hdf5_reader::snapshot_image(image, out);
    } catch (const WriteFailed&) {
        status = snap::kExitWriteFailed;
    } catch (...) {
        status = snap::kExitInternal;
    }
    // No atexit handlers: libhdf5's own shutdown would walk what a damaged file left behind.
    ::_exit(status);
}
