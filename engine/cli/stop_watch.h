// The graceful stop of `thresher-engine train`, and its deadline. Two things ask for a stop:
//
//   SIGTERM or SIGINT   the local launcher's stop(), `kill`, Ctrl-C in a terminal
//   EOF on stdin        only with --secret-stdin (stdin_control.h): the SSH launcher's stop(), or
//                       its connection dropped (sshd closes the pipes of a session it loses)
//   silence on stdin    only with --stdin-heartbeat S: the SSH launcher writes a heartbeat line
//                       every few seconds; nothing for S seconds means it froze or its machine
//                       vanished without closing the connection (a cut network: sshd would not
//                       notice for hours, and the engine would train on for nobody)
//
// Either one sets the stop flag, and the run ends as it does when the user stops it:
//
//   stop flag ─→ workers end at their next iteration ─→ run_finished "stopped", exit kExitStopped
//             └→ still running `deadline` later (a worker blocked on a vanished peer, a drain
//                waiting for a node that trains on, one very long iteration)? The watch writes
//                run_finished "stopped" itself and ends the process with _Exit(kExitStopped).
//
// A second signal ends the process at once (_exit(kExitStopped), no run_finished): the user who
// presses Ctrl-C twice does not want to wait. The deadline is shorter than the launchers' grace
// period (5 s by default) before they SIGKILL, so a stopped engine always reports its end.
//
// Signal handlers may do almost nothing (no locks, no allocation, no iostreams), so the handler
// writes the signal's number to a pipe and the watch's own thread does the rest.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace thresher::cli {

// The engine's exit code after a stop (as a shell reports a SIGTERM'd process: 128 + 15).
constexpr int kExitStopped = 143;

class StopWatch {
public:
    // Installs the SIGTERM and SIGINT handlers (for the life of the process: a signal after the
    // watch is gone ends the process with kExitStopped) and starts watching. `eof_fd` >= 0: also
    // stop when that descriptor reaches EOF (anything read from it is discarded).
    // `on_deadline(reason)` reports the stop when the process did not end in time.
    // `heartbeat` > 0 (with eof_fd >= 0): also stop when nothing arrives on eof_fd for that long.
    StopWatch(std::atomic<bool>& stop, int eof_fd, std::function<void(const std::string& reason)> on_deadline,
              std::chrono::milliseconds deadline, std::chrono::milliseconds heartbeat = std::chrono::milliseconds(0));
    // Cancels the watch and joins its thread, so `on_deadline` never runs after the watch is gone.
    ~StopWatch();
    StopWatch(const StopWatch&) = delete;
    StopWatch& operator=(const StopWatch&) = delete;

    // What asked for the stop, in words ("SIGTERM", "stdin closed"); empty while nothing has.
    std::string reason() const;
    // Once a stop was asked for: waits, up to `limit`, until its "stopping the run" line is written
    // (it goes out from a thread of its own, so a stuck stderr cannot hold the stop). Returns at
    // once when no stop was asked for.
    void wait_until_said(std::chrono::milliseconds limit);

private:
    void watch();

    std::atomic<bool>& stop_;
    int eof_fd_;
    int signal_fd_;       // the read end of the handlers' pipe
    int cancel_fd_ = -1;  // eventfd: the destructor's wake-up call
    std::function<void(const std::string&)> on_deadline_;
    std::chrono::milliseconds deadline_;
    std::chrono::milliseconds heartbeat_;
    mutable std::mutex mutex_;
    std::string reason_;
    // The "stopping the run" line goes out from a thread of its own (watch()); a run that then ends
    // normally waits for it, up to a second, or the process could exit before it was written.
    struct Said {
        std::mutex mutex;
        std::condition_variable done_cv;
        bool done = false;
    };
    std::shared_ptr<Said> said_;  // set by the watch thread, under mutex_
    std::thread thread_;
};

}  // namespace thresher::cli
