// StopRequests: what asks `thresher-engine train` to stop, watched from a thread of its own.
//
//   SIGTERM or SIGINT   the local launcher's stop(), `kill`, Ctrl-C in a terminal
//   EOF on stdin        only with --secret-stdin (stdin_control.h): the SSH launcher's stop(), or
//                       its connection dropped (sshd closes the pipes of a session it loses)
//   silence on stdin    only with --stdin-heartbeat S: the SSH launcher writes a heartbeat line
//                       every few seconds; nothing for S seconds means it froze or its machine
//                       vanished without closing the connection (a cut network: sshd would not
//                       notice for hours, and the engine would train on for nobody)
//
// The first of these, in this order:
//
//   says "thresher-engine: SIGTERM: stopping the run at the next iteration" (from a thread of its
//   own: stderr may be a pipe nobody drains any more, a frozen launcher's SSH channel with its
//   window full, and a blocked write must not hold the stop) ─→ sets the stop flag (workers end at
//   their next iteration: run_finished "stopped", exit kExitStopped) ─→ calls on_stop(reason),
//   which in main.cpp starts the StopDeadline (stop_deadline.h) for a run that does not end.
//
// A second signal ends the process at once (_exit(kExitStopped), no run_finished): the user who
// presses Ctrl-C twice does not want to wait.
//
// Signal handlers may do almost nothing (no locks, no allocation, no iostreams), so the handler
// writes the signal's number to a pipe and the watch thread does the rest. The handlers stay for
// the life of the process: a signal after the StopRequests is gone (the process is ending) only
// writes to that pipe, and a second one still ends the process.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cli/exit_status.h"

namespace thresher::cli {

// What besides SIGTERM and SIGINT asks for a stop.
struct StopSources {
    int stdin_fd = -1;  // >= 0: EOF (or an error) here asks for a stop; what it reads is discarded
    // > 0 (with stdin_fd >= 0): nothing arriving on stdin_fd for this long asks for a stop too.
    std::chrono::milliseconds heartbeat{0};
};

class StopRequests {
public:
    // Writes one line where the user sees it; std::cerr by default (tests pass their own).
    using Say = std::function<void(const std::string& line)>;
    static void say_to_stderr(const std::string& line);

    // Installs the SIGTERM and SIGINT handlers (once per process) and starts watching `sources`.
    // On the first request: says so, sets `stop`, then calls `on_stop(reason)` from the watch
    // thread (it may be empty).
    StopRequests(std::atomic<bool>& stop, StopSources sources, std::function<void(const std::string& reason)> on_stop,
                 Say say = say_to_stderr);
    // Ends the watch and joins its thread, so `on_stop` never runs after the object is gone; waits
    // up to a second for the "stopping the run" line (a run that stopped in time must not lose it
    // to the exit), then joins the thread that says it. See the .cpp for a stderr stuck past that.
    ~StopRequests();
    StopRequests(const StopRequests&) = delete;
    StopRequests& operator=(const StopRequests&) = delete;

    // What asked for the stop, in words ("SIGTERM", "stdin closed"); empty while nothing has.
    std::string reason() const;
    // Once a stop was asked for: waits, up to `limit`, until its "stopping the run" line is
    // written; true when it is. Returns true at once when no stop was asked for (nothing to say).
    bool wait_until_said(std::chrono::milliseconds limit) const;

private:
    void watch();
    std::string wait_for_request();

    std::atomic<bool>& stop_;
    StopSources sources_;
    std::function<void(const std::string&)> on_stop_;
    Say say_;
    int signal_fd_;       // the read end of the handlers' pipe (the process's, never closed)
    int cancel_fd_ = -1;  // eventfd: the destructor's wake-up call to the watch thread

    // The "stopping the run" line being said: shared with the speaker thread, which may outlive
    // this object when stderr is stuck (see the destructor).
    struct Saying {
        std::mutex mutex;
        std::condition_variable done_cv;
        bool done = false;
    };

    mutable std::mutex mutex_;
    std::string reason_;              // set once, by the watch thread, before the stop flag
    std::shared_ptr<Saying> saying_;  // likewise; null while nothing asked for a stop

    std::thread speaker_;  // says the line; started by the watch thread, which the destructor joins first
    std::thread watch_;
};

}  // namespace thresher::cli
