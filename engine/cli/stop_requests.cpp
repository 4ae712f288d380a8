// StopRequests: see stop_requests.h.
#include "cli/stop_requests.h"

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/error.h"

namespace thresher::cli {

namespace {

// The handlers' pipe, made once and never closed: a handler may run on any thread at any moment,
// even while a StopRequests is being destroyed, and must never write to a descriptor that was reused.
int g_signal_pipe[2] = {-1, -1};
// Signals received so far. Lock-free atomics are the only shared state a handler may touch.
std::atomic<int> g_signals{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int sig) {
    if (g_signals.fetch_add(1) > 0) ::_exit(kExitStopped);  // the second one: at once
    const int saved = errno;  // the interrupted code may be about to read errno
    const unsigned char byte = static_cast<unsigned char>(sig);
    [[maybe_unused]] const ssize_t n = ::write(g_signal_pipe[1], &byte, 1);  // non-blocking
    errno = saved;
}

// Installs the handlers once per process; returns the pipe's read end.
int install_stop_signals() {
    static const int read_fd = [] {
        if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
            throw Error(std::string("cannot create the stop-signal pipe: ") + std::strerror(errno));
        struct sigaction sa {};
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        // SA_RESTART: a signal landing on a worker or network thread must not turn its blocking
        // read or write into an EINTR error.
        sa.sa_flags = SA_RESTART;
        ::sigaction(SIGTERM, &sa, nullptr);
        // A shell starts background jobs with SIGINT ignored (so Ctrl-C spares them); keep it so.
        struct sigaction old {};
        if (::sigaction(SIGINT, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) ::sigaction(SIGINT, &sa, nullptr);
        return g_signal_pipe[0];
    }();
    return read_fd;
}

std::string signal_name(int sig) {
    if (sig == SIGTERM) return "SIGTERM";
    if (sig == SIGINT) return "SIGINT";
    return "signal " + std::to_string(sig);
}

}  // namespace

void StopRequests::say_to_stderr(const std::string& line) { std::cerr << line << std::endl; }

StopRequests::StopRequests(std::atomic<bool>& stop, StopSources sources,
                           std::function<void(const std::string&)> on_stop, Say say)
    : stop_(stop), sources_(sources), on_stop_(std::move(on_stop)), say_(std::move(say)),
      signal_fd_(install_stop_signals()) {
    if (sources_.stdin_fd < 0) sources_.heartbeat = std::chrono::milliseconds(0);
    cancel_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (cancel_fd_ < 0) throw Error(std::string("stop requests: eventfd failed: ") + std::strerror(errno));
    watch_ = std::thread([this] { watch(); });
}

StopRequests::~StopRequests() {
    // An eventfd's counter starts at 0 and this is its only write: it cannot fail.
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(cancel_fd_, &one, sizeof one);
    watch_.join();  // from here on nothing starts the speaker
    ::close(cancel_fd_);
    if (!speaker_.joinable()) return;
    if (wait_until_said(std::chrono::seconds(1))) {
        speaker_.join();
        return;
    }
    // stderr has been stuck for a second or more (nobody reads the pipe): the speaker is blocked
    // in a write that may never return, and joining it would hang the exit. This object lives for
    // the whole of main() (main.cpp), so the process ends right after this, and with it the
    // speaker: let it go rather than wait for a reader that is not coming. It touches nothing of
    // this object (its Say and the Saying are its own copies).
    speaker_.detach();
}

std::string StopRequests::reason() const {
    std::lock_guard lock(mutex_);
    return reason_;
}

bool StopRequests::wait_until_said(std::chrono::milliseconds limit) const {
    std::shared_ptr<Saying> saying;
    {
        std::lock_guard lock(mutex_);
        saying = saying_;
    }
    if (!saying) return true;
    std::unique_lock lock(saying->mutex);
    return saying->done_cv.wait_for(lock, limit, [&] { return saying->done; });
}

std::string StopRequests::wait_for_request() {
    // Waits for a signal, EOF on stdin or a heartbeat missed; an error on the descriptor means
    // the same as EOF: nobody can talk to us any more. Empty when cancelled.
    using Clock = std::chrono::steady_clock;
    char sink[4096];
    auto last_heard = Clock::now();
    for (;;) {
        int timeout_ms = -1;
        if (sources_.heartbeat.count() > 0) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(last_heard + sources_.heartbeat - Clock::now());
            if (left.count() <= 0) {
                char secs[32];
                std::snprintf(secs, sizeof secs, "%g", static_cast<double>(sources_.heartbeat.count()) / 1000.0);
                return std::string("no heartbeat from the launcher on stdin for ") + secs +
                       " s (its machine or connection is gone)";
            }
            timeout_ms = static_cast<int>(left.count()) + 1;
        }
        // poll() skips an entry whose descriptor is negative.
        pollfd fds[3] = {{cancel_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}, {sources_.stdin_fd, POLLIN, 0}};
        const int rc = ::poll(fds, 3, timeout_ms);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) return std::string("poll failed: ") + std::strerror(errno);
        if (fds[0].revents) return {};  // cancelled: the process is ending normally
        if (fds[1].revents & POLLIN) {
            unsigned char sig = 0;
            if (::read(signal_fd_, &sig, 1) == 1) return signal_name(sig);
        }
        if (fds[2].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) {
            const ssize_t n = ::read(sources_.stdin_fd, sink, sizeof sink);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) return "stdin closed";
            last_heard = Clock::now();
        }
    }
}

void StopRequests::watch() {
    const std::string why = wait_for_request();
    if (why.empty()) return;
    auto saying = std::make_shared<Saying>();
    {
        // Before the stop flag: a run that stops at once still finds a line to wait for.
        std::lock_guard lock(mutex_);
        reason_ = why;
        saying_ = saying;
    }
    // The speaker holds what it needs by value (the Say, the shared Saying), never `this`.
    speaker_ = std::thread([say = say_, saying, line = "thresher-engine: " + why + ": stopping the run at the next iteration"] {
        say(line);
        std::lock_guard lock(saying->mutex);
        saying->done = true;
        saying->done_cv.notify_all();
    });
    stop_ = true;
    if (on_stop_) on_stop_(why);
}

}  // namespace thresher::cli
