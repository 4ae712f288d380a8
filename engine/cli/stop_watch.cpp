// StopWatch: see stop_watch.h.
#include "cli/stop_watch.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <poll.h>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>

#include "core/error.h"

namespace thresher::cli {

namespace {

// The handlers' pipe, made once and never closed: a handler may run on any thread at any moment,
// even while a watch is being destroyed, and must never write to a descriptor that was reused.
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

StopWatch::StopWatch(std::atomic<bool>& stop, int eof_fd, std::function<void(const std::string&)> on_deadline,
                     std::chrono::milliseconds deadline, std::chrono::milliseconds heartbeat)
    : stop_(stop), eof_fd_(eof_fd), signal_fd_(install_stop_signals()), on_deadline_(std::move(on_deadline)),
      deadline_(deadline), heartbeat_(eof_fd >= 0 ? heartbeat : std::chrono::milliseconds(0)) {
    cancel_fd_ = ::eventfd(0, EFD_CLOEXEC);
    if (cancel_fd_ < 0) throw Error(std::string("stop watch: eventfd failed: ") + std::strerror(errno));
    thread_ = std::thread([this] { watch(); });
}

StopWatch::~StopWatch() {
    const std::uint64_t one = 1;
    if (::write(cancel_fd_, &one, sizeof one) < 0) {
        // Cannot fail for an eventfd below its maximum; joining would then hang, so let it go.
        thread_.detach();
    } else {
        thread_.join();
    }
    ::close(cancel_fd_);
    // The stop was asked for and the run ended in time: its "stopping the run" line must not be
    // lost to the exit (test_stop_signals saw it missing once), nor may a stuck stderr hold the
    // exit for long.
    wait_until_said(std::chrono::seconds(1));
}

void StopWatch::wait_until_said(std::chrono::milliseconds limit) {
    std::shared_ptr<Said> said;
    {
        std::lock_guard lock(mutex_);
        said = said_;
    }
    if (!said) return;
    std::unique_lock lock(said->mutex);
    said->done_cv.wait_for(lock, limit, [&] { return said->done; });
}

std::string StopWatch::reason() const {
    std::lock_guard lock(mutex_);
    return reason_;
}

void StopWatch::watch() {
    // Phase 1: wait for a signal or EOF (an error on the descriptor means the same: nobody can
    // talk to us any more).
    std::string why;
    char sink[4096];
    bool eof_open = eof_fd_ >= 0;
    using Clock = std::chrono::steady_clock;
    auto last_heard = Clock::now();
    while (why.empty()) {
        int timeout_ms = -1;
        if (heartbeat_.count() > 0) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(last_heard + heartbeat_ - Clock::now());
            if (left.count() <= 0) {
                char secs[32];
                std::snprintf(secs, sizeof secs, "%g", static_cast<double>(heartbeat_.count()) / 1000.0);
                why = std::string("no heartbeat from the launcher on stdin for ") + secs +
                      " s (its machine or connection is gone)";
                break;
            }
            timeout_ms = static_cast<int>(left.count()) + 1;
        }
        // poll() skips an entry whose descriptor is negative.
        pollfd fds[3] = {{cancel_fd_, POLLIN, 0}, {signal_fd_, POLLIN, 0}, {eof_open ? eof_fd_ : -1, POLLIN, 0}};
        const int rc = ::poll(fds, 3, timeout_ms);
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) {
            why = std::string("poll failed: ") + std::strerror(errno);
            break;
        }
        if (fds[0].revents) return;  // cancelled: the process is ending normally
        if (fds[1].revents & POLLIN) {
            unsigned char sig = 0;
            if (::read(signal_fd_, &sig, 1) == 1) why = signal_name(sig);
        }
        if (why.empty() && (fds[2].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))) {
            const ssize_t n = ::read(eof_fd_, sink, sizeof sink);
            if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (n <= 0) why = "stdin closed";
            if (n > 0) last_heard = Clock::now();
        }
    }
    // Said from a thread of its own: stderr may be a pipe nobody drains any more (a frozen
    // launcher's SSH channel, its window full), and a blocked write here would keep the deadline
    // below from ever being enforced. _Exit ends that thread with the process. `said_` is set
    // before the stop, so a run that stops at once still finds the line to wait for.
    auto said = std::make_shared<Said>();
    {
        std::lock_guard lock(mutex_);
        reason_ = why;
        said_ = said;
    }
    std::thread([why, said] {
        std::cerr << "thresher-engine: " << why << ": stopping the run at the next iteration" << std::endl;
        std::lock_guard lock(said->mutex);
        said->done = true;
        said->done_cv.notify_all();
    }).detach();
    stop_ = true;
    // Phase 2: the graceful stop has `deadline_` to end the process; after that, end it here.
    for (;;) {
        pollfd cancel{cancel_fd_, POLLIN, 0};
        const int rc = ::poll(&cancel, 1, static_cast<int>(deadline_.count()));
        if (rc < 0 && errno == EINTR) continue;
        if (rc > 0) return;  // the process finished its stop in time
        break;
    }
    // The last words (a warning and run_finished on stdout) get a second: stdout may be as stuck
    // as stderr, and the process ends either way.
    std::thread([] {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        std::_Exit(kExitStopped);
    }).detach();
    if (on_deadline_) on_deadline_(why);
    std::_Exit(kExitStopped);
}

}  // namespace thresher::cli
