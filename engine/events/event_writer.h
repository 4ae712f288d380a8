// Writes one JSON object per line: {"event": ..., "t": seconds since run start, "node": rank,
// ...fields}. Thread-safe (workers report from their own threads); each line is flushed at once
// so the launcher and the UI see progress as it happens. Nothing else may write to stdout.
// Events are the structs of events.h: a writer cannot make up a field name at its call site.
#pragma once

#include <chrono>
#include <mutex>
#include <ostream>
#include <string_view>

#include <nlohmann/json.hpp>

#include "events/events.h"

namespace thresher::events {

class EventWriter {
public:
    explicit EventWriter(std::ostream& out, int node = 0);

    // Any struct of events.h (RunStarted, Iteration, EpochEnd, NodeJoined, Warning, ErrorEvent,
    // RunFinished): its kName and its to_json fields.
    template <class Event>
    void emit(const Event& e) {
        write(Event::kName, to_json(e));
    }
    void warning(const std::string& message) { emit(Warning{message, {}}); }
    void error(const std::string& message) { emit(ErrorEvent{message, {}}); }
    double seconds() const;  // since construction (the run start)

private:
    void write(std::string_view event, nlohmann::json fields);

    std::ostream& out_;
    int node_;
    std::chrono::steady_clock::time_point start_;
    std::mutex mutex_;
};

}  // namespace thresher::events
