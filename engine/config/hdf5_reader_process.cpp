#include "config/hdf5_reader_process.h"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "core/error.h"

extern char** environ;

namespace thresher::config {

namespace {

using Clock = std::chrono::steady_clock;

class Fd {
public:
    explicit Fd(int fd = -1) : fd_(fd) {}
    ~Fd() { reset(); }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

private:
    int fd_;
};

// The helper's process. The destructor kills and reaps it unless it was reaped already, so no
// way out of run_hdf5_reader (an exception included) leaves it running or a zombie.
class Helper {
public:
    explicit Helper(pid_t pid) : pid_(pid) {}
    ~Helper() { kill_and_reap(); }
    Helper(const Helper&) = delete;
    Helper& operator=(const Helper&) = delete;

    // Its wait status once it has exited (reaping it); nothing while it runs.
    std::optional<int> exited() {
        if (status_) return status_;
        int s = 0;
        pid_t r;
        do r = ::waitpid(pid_, &s, WNOHANG);
        while (r < 0 && errno == EINTR);
        if (r == pid_) status_ = s;
        // ECHILD: someone else reaped it (SIGCHLD ignored). It is gone, its status unknown; the
        // snapshot's end record still tells a complete one from a cut one.
        else if (r < 0) status_ = 0;
        return status_;
    }
    // Waits for it to exit until `deadline`.
    std::optional<int> wait_until(Clock::time_point deadline) {
        auto pause = std::chrono::microseconds(100);
        while (!exited()) {
            if (Clock::now() >= deadline) return std::nullopt;
            std::this_thread::sleep_for(pause);
            pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(20));
        }
        return status_;
    }
    // SIGKILL, then reaped within seconds (a process stuck in the kernel is left, not waited on
    // for ever). Never once reaped: its pid may be another process's by then.
    void kill_and_reap() {
        if (status_) return;
        ::kill(pid_, SIGKILL);
        wait_until(Clock::now() + std::chrono::seconds(10));
    }

private:
    pid_t pid_;
    std::optional<int> status_;
};

// posix_spawn: `program` with `child_end` as its stdin and stdout. Every other descriptor is
// closed in the child (closefrom; ours are also close-on-exec, for any other thread's children),
// its signal mask is empty and its signals have their default actions (a blocked or ignored
// signal of this process must not reach libhdf5's). Returns an errno value on failure.
int spawn(const std::string& program, const std::vector<std::string>& args, int child_end, pid_t& pid) {
    struct Actions {
        posix_spawn_file_actions_t a;
        Actions() { posix_spawn_file_actions_init(&a); }
        ~Actions() { posix_spawn_file_actions_destroy(&a); }
    } actions;
    struct Attributes {
        posix_spawnattr_t a;
        Attributes() { posix_spawnattr_init(&a); }
        ~Attributes() { posix_spawnattr_destroy(&a); }
    } attributes;
    int err = posix_spawn_file_actions_adddup2(&actions.a, child_end, 0);
    if (!err) err = posix_spawn_file_actions_adddup2(&actions.a, child_end, 1);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    if (!err) err = posix_spawn_file_actions_addclosefrom_np(&actions.a, 3);
#endif
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (!err) err = posix_spawnattr_setsigmask(&attributes.a, &none);
    if (!err) err = posix_spawnattr_setsigdefault(&attributes.a, &all);
    if (!err) err = posix_spawnattr_setflags(&attributes.a, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (err) return err;
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(program.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    return posix_spawn(&pid, program.c_str(), &actions.a, &attributes.a, argv.data(), environ);
}

ConfigError damaged(const std::string& source, const std::string& problem) {
    return ConfigError(source + ": " + problem + ": the file is damaged or not one Thresher can read");
}

}  // namespace

std::vector<std::uint8_t> run_hdf5_reader(const std::string& program, std::span<const std::uint8_t> image,
                                          const Hdf5ReaderLimits& limits, const std::string& source) {
    const auto deadline = Clock::now() + std::chrono::seconds(limits.seconds);
    // One socket both ways: send() with MSG_NOSIGNAL, so a helper that stops reading is an
    // error code here, never SIGPIPE for the app or the engine; shutdown() is the image's end
    // however many processes hold a copy of the descriptor.
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        throw ConfigError(source + ": cannot start reading the HDF5 file: " + std::strerror(errno));
    Fd ours(pair[0]), theirs(pair[1]);
    pid_t pid = -1;
    // The helper's own deadline is a backstop for when this process is gone: ours comes first.
    const int err = spawn(program, {"--max-bytes", std::to_string(image.size()), "--seconds", std::to_string(limits.seconds + 10)},
                          theirs.get(), pid);
    if (err) throw ConfigError(source + ": cannot start " + program + " to read the HDF5 file: " + std::strerror(err));
    Helper helper(pid);
    theirs.reset();

    std::vector<std::uint8_t> out;
    std::size_t sent = 0;
    bool sending = true;
    std::string problem;
    const auto stop_sending = [&] {
        ::shutdown(ours.get(), SHUT_WR);
        sending = false;
    };
    if (image.empty()) stop_sending();
    for (bool reading = true; reading;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) {
            problem = "libhdf5 took longer than " + std::to_string(limits.seconds) + " s reading it";
            break;
        }
        pollfd p{ours.get(), static_cast<short>(POLLIN | (sending ? POLLOUT : 0)), 0};
        // Slices of at most 250 ms: an exit is noticed even if the helper's end of the socket
        // lives on in another process (no end of file then).
        const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 250)));
        if (r < 0 && errno != EINTR) {
            problem = std::string("waiting for libhdf5 failed (") + std::strerror(errno) + ")";
            break;
        }
        if (r <= 0) {
            if (r == 0 && helper.exited()) reading = false;  // then read what it left below
        } else if (sending && (p.revents & POLLOUT)) {
            const std::size_t chunk = std::min<std::size_t>(image.size() - sent, std::size_t{1} << 20);
            const ssize_t k = ::send(ours.get(), image.data() + sent, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (k > 0 && (sent += static_cast<std::size_t>(k)) == image.size()) stop_sending();
            // The helper stopped reading (it refused the input or died): its exit status says why.
            if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) stop_sending();
        }
        // Whatever is there now, without blocking; the end of file or an exit ends the loop.
        for (;;) {
            std::uint8_t buf[65536];
            const ssize_t n = ::recv(ours.get(), buf, sizeof buf, MSG_DONTWAIT);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            if (n <= 0) {
                reading = false;
                break;
            }
            if (out.size() + static_cast<std::size_t>(n) > limits.output_bytes) {
                problem = "libhdf5 returned more than the file can hold";
                reading = false;
                break;
            }
            out.insert(out.end(), buf, buf + n);
        }
    }
    if (!problem.empty()) {
        helper.kill_and_reap();
        throw damaged(source, problem);
    }
    // Its stdout is closed; its exit follows at once, but it too has the deadline.
    const auto status = helper.wait_until(deadline);
    if (!status) {
        helper.kill_and_reap();
        throw damaged(source, "libhdf5 took longer than " + std::to_string(limits.seconds) + " s reading it");
    }
    if (WIFSIGNALED(*status))
        throw ConfigError(source + ": libhdf5 crashed reading the file (signal " + std::to_string(WTERMSIG(*status)) +
                          "): it is damaged or not an HDF5 file Thresher can read");
    if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0)
        throw ConfigError(source + ": libhdf5 could not read the file (exit " + std::to_string(WEXITSTATUS(*status)) + ")");
    return out;
}

}  // namespace thresher::config
