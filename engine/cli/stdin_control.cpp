// read_secret_line and StdinWatch: see stdin_control.h.
#include "cli/stdin_control.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>  // explicit_bzero
#include <poll.h>
#include <string>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/error.h"

namespace thresher::cli {

dist::Secret read_secret_line(int fd) {
    std::string line;
    // One byte at a time: a buffered reader would swallow whatever follows the line, and the
    // secret is short (64 hex digits), so the cost is nothing.
    for (;;) {
        char c = 0;
        const ssize_t n = ::read(fd, &c, 1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (!line.empty()) ::explicit_bzero(line.data(), line.size());
            throw ConfigError("--secret-stdin: stdin ended before the secret's line (the launcher writes the run "
                              "secret and a newline first)");
        }
        if (c == '\n') break;
        line.push_back(c);
        if (line.size() > 4096) {
            ::explicit_bzero(line.data(), line.size());
            throw ConfigError("--secret-stdin: the first line of stdin is over 4096 bytes; not a run secret");
        }
    }
    try {
        dist::Secret secret = dist::parse_secret(line, "--secret-stdin");
        ::explicit_bzero(line.data(), line.size());
        return secret;
    } catch (...) {
        ::explicit_bzero(line.data(), line.size());
        throw;
    }
}

StdinWatch::StdinWatch(int fd, std::atomic<bool>& stop, std::function<void()> on_deadline, std::chrono::milliseconds deadline)
    : fd_(fd), stop_(stop), on_deadline_(std::move(on_deadline)), deadline_(deadline) {
    cancel_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (cancel_fd_ < 0) throw Error("--secret-stdin: eventfd failed");
    thread_ = std::thread([this] { watch(); });
}

StdinWatch::~StdinWatch() {
    const std::uint64_t one = 1;
    if (::write(cancel_fd_, &one, sizeof one) < 0) {
        // Cannot fail for an eventfd below its maximum; joining would then hang, so let it go.
        thread_.detach();
    } else {
        thread_.join();
    }
    ::close(cancel_fd_);
}

void StdinWatch::watch() {
    // Phase 1: wait for EOF (or an error, which means the same: nobody can talk to us any more).
    char sink[4096];
    for (;;) {
        pollfd fds[2] = {{fd_, POLLIN, 0}, {cancel_fd_, POLLIN, 0}};
        const int rc = ::poll(fds, 2, -1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) break;
        if (fds[1].revents) return;  // cancelled: the process is ending normally
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) {
            const ssize_t n = ::read(fd_, sink, sizeof sink);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) break;  // EOF
        }
    }
    stop_ = true;
    // Phase 2: the graceful stop has `deadline_` to end the process; after that, end it here.
    for (;;) {
        pollfd cancel{cancel_fd_, POLLIN, 0};
        const int rc = ::poll(&cancel, 1, static_cast<int>(deadline_.count()));
        if (rc < 0 && errno == EINTR) continue;
        if (rc > 0) return;  // the process finished its stop in time
        break;
    }
    if (on_deadline_) on_deadline_();
    std::_Exit(kExitStopped);
}

}  // namespace thresher::cli
