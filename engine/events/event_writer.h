// Writes one JSON object per line: {"event": ..., "t": seconds since run start, "node": rank,
// ...fields}. Thread-safe (workers report from their own threads); each line is flushed at once
// so the launcher and the UI see progress as it happens. Nothing else may write to stdout.
#pragma once

#include <chrono>
#include <mutex>
#include <ostream>
#include <string_view>

#include <nlohmann/json.hpp>

namespace thresher::events {

class EventWriter {
public:
    explicit EventWriter(std::ostream& out, int node = 0);

    void write(std::string_view event, nlohmann::json fields = nlohmann::json::object());
    void warning(const std::string& message);
    void error(const std::string& message);
    double seconds() const;  // since construction (the run start)

private:
    std::ostream& out_;
    int node_;
    std::chrono::steady_clock::time_point start_;
    std::mutex mutex_;
};

}  // namespace thresher::events
