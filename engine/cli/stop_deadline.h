// StopDeadline: ends the process when a stop takes too long.
//
// Once a stop was asked for (StopRequests, stop_requests.h, calls start()), the run has
// `deadline` to end by itself:
//
//   start(reason) ─→ the run ends in time ─→ main() returns, the destructor cancels the countdown
//                 └→ still running `deadline` later (a worker blocked on a vanished peer, a drain
//                    waiting for a node that trains on, one very long iteration, a stuck stdout)?
//                    last_words(reason) (main.cpp: a warning and run_finished "stopped"), then
//                    end(kExitStopped): std::_Exit, no destructors, no joins.
//
// The last words get `grace` (a second) of their own: stdout may be as stuck as stderr, and the
// process ends either way. The deadline (3 s in main.cpp) is shorter than the launchers' grace
// period (5 s by default) before they SIGKILL, so a stopped engine always reports its end.
//
// Worked numbers with main.cpp's values: SIGTERM at t = 10 s; the drain hangs; at 13 s the
// warning and run_finished go out and the process exits 143; had stdout been stuck too, the exit
// comes at 14 s without them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "cli/exit_status.h"

namespace thresher::cli {

class StopDeadline {
public:
    using LastWords = std::function<void(const std::string& reason)>;
    // Ends the process with a status: std::_Exit in production; tests pass one that records it
    // and returns (the countdown then just finishes).
    using End = std::function<void(int status)>;

    explicit StopDeadline(std::chrono::milliseconds deadline, LastWords last_words = {},
                          std::chrono::milliseconds grace = std::chrono::seconds(1), End end = std::_Exit);
    // Cancels a countdown that has not expired and joins its threads, so nothing of this object
    // runs after it is gone. A countdown that did expire is past cancelling: the destructor waits
    // for its last words (at most `grace` with the production End, which ends the process then).
    ~StopDeadline();
    StopDeadline(const StopDeadline&) = delete;
    StopDeadline& operator=(const StopDeadline&) = delete;

    // Starts the countdown (from any thread); `reason` is handed to the last words. Calls after
    // the first, or after the destructor began, do nothing.
    void start(const std::string& reason);

private:
    void count_down(std::string reason);
    void end_once();

    const std::chrono::milliseconds deadline_;
    const LastWords last_words_;
    const std::chrono::milliseconds grace_;
    const End end_;

    std::mutex mutex_;
    std::condition_variable cv_;
    bool started_ = false;
    bool cancelled_ = false;
    bool last_words_said_ = false;
    bool ended_ = false;
    std::thread countdown_;  // started by start(); waits out the deadline, then says the last words
    std::thread grace_timer_;  // started by the countdown when it expires: ends the process if the last words hang
};

}  // namespace thresher::cli
