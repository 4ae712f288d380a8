// Plain TCP helpers for tests that play an attacker on loopback: a connection to a local port, and
// a relay that records what its client sends (someone on the path, to replay it later).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace test_support {

// A connected TCP socket to 127.0.0.1:port, or -1.
int connect_to(int port);

// A TCP relay from `listen_port` to `target_port` that records what the client sends: an attacker
// on the path. Serves one connection, until either side closes or stop().
class RecordingRelay {
public:
    RecordingRelay(int listen_port, int target_port);
    ~RecordingRelay();
    bool ok() const { return listener_ >= 0; }
    std::vector<std::uint8_t> recorded();

private:
    void run();
    int listener_;
    int target_;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::vector<std::uint8_t> recorded_;
    std::thread thread_;
};


}  // namespace test_support
