// `--secret-stdin`: how the SSH launcher hands a remote engine its run secret and keeps a hold on
// it. The launcher writes the secret as the first line of the engine's stdin (never on a command
// line, where `ps` shows it; never in a file on a host it does not own) and then keeps stdin open
// for the whole run. stdin reaching EOF after that means the launcher is gone or wants the run to
// end: its stop() closes stdin, and a dropped SSH connection closes it too (sshd closes the
// pipes of a session it loses). Without a pty nothing else would end the remote engine, so:
//
//   EOF on stdin ─→ stop flag set ─→ workers end at their next iteration, run_finished "stopped"
//                 └→ not exited within the deadline (a worker blocked on a vanished peer)?
//                    run_finished "stopped" is written by the watch itself and the process ends
//                    with _Exit(kExitStopped).
//
// Only `--secret-stdin` turns this on; an engine started from a shell or by the local launcher
// (stdin /dev/null, EOF at once) is unaffected.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "dist/net/secret.h"

namespace thresher::cli {

// The engine's exit code after a stop (as a shell reports a SIGTERM'd process: 128 + 15).
constexpr int kExitStopped = 143;

// Reads the first line of `fd` byte by byte (no buffering: nothing after the '\n' is consumed)
// and decodes it as a secret (hex or raw, see dist::parse_secret). Throws ConfigError when the
// stream ends before a newline or the secret is too short. The line is wiped after decoding.
dist::Secret read_secret_line(int fd);

// Watches `fd` for EOF on its own thread (anything read is discarded). On EOF it sets `stop`;
// if the process still runs `deadline` later, it calls `on_deadline` (report the stop) and ends
// the process with _Exit(kExitStopped). The destructor cancels the watch and joins the thread,
// so `on_deadline` never runs after the watch is gone.
class StdinWatch {
public:
    StdinWatch(int fd, std::atomic<bool>& stop, std::function<void()> on_deadline, std::chrono::milliseconds deadline);
    ~StdinWatch();
    StdinWatch(const StdinWatch&) = delete;
    StdinWatch& operator=(const StdinWatch&) = delete;

private:
    void watch();

    int fd_;
    int cancel_fd_ = -1;  // eventfd: the destructor's wake-up call
    std::atomic<bool>& stop_;
    std::function<void()> on_deadline_;
    std::chrono::milliseconds deadline_;
    std::thread thread_;
};

}  // namespace thresher::cli
