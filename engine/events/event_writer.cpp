#include "events/event_writer.h"

#include <cmath>

namespace thresher::events {

EventWriter::EventWriter(std::ostream& out, int node)
    : out_(out), node_(node), start_(std::chrono::steady_clock::now()) {}

double EventWriter::seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void EventWriter::write(std::string_view event, nlohmann::json fields) {
    nlohmann::json line = nlohmann::json::object();
    line["event"] = event;
    // Millisecond resolution keeps lines short; readers derive rates from these.
    line["t"] = std::round(seconds() * 1000.0) / 1000.0;
    line["node"] = node_;
    for (auto& [k, v] : fields.items()) line[k] = std::move(v);
    // Non-finite numbers (a diverged loss) become null rather than invalid JSON.
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::lock_guard lock(mutex_);
    out_ << text << '\n';
    out_.flush();
}


}  // namespace thresher::events
