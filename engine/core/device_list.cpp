#include "core/device_list.h"

#include <cctype>

#include "core/error.h"

namespace thresher {

namespace {

std::string_view trimmed(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// KIND (lower-case letters) or KIND:INDEX (decimal, at most 4 digits: no machine has 10 000 GPUs).
bool well_formed(std::string_view entry) {
    const auto colon = entry.find(':');
    const std::string_view kind = entry.substr(0, colon);
    if (kind.empty()) return false;
    for (char c : kind)
        if (c < 'a' || c > 'z') return false;
    if (colon == std::string_view::npos) return true;
    const std::string_view index = entry.substr(colon + 1);
    if (index.empty() || index.size() > 4) return false;
    for (char c : index)
        if (c < '0' || c > '9') return false;
    return true;
}

// A bounded quote of what the user wrote: a pasted file must not become the whole message.
std::string quoted(std::string_view s) {
    return "\"" + std::string(s.substr(0, 64)) + (s.size() > 64 ? "...\"" : "\"");
}

}  // namespace

DeviceList DeviceList::parse(std::string_view text, std::string_view what) {
    DeviceList list;
    list.devices_.clear();
    std::string_view rest = text;
    for (;;) {
        const auto comma = rest.find(',');
        const std::string_view entry = trimmed(rest.substr(0, comma));
        if (!well_formed(entry))
            throw ConfigError(std::string(what) + " " + quoted(text) + ": " +
                              (entry.empty() ? std::string("an empty entry")
                                             : "entry " + quoted(entry) + " is not a device") +
                              "; expected a device such as cpu, cuda or cuda:1, or one per worker separated by "
                              "commas, such as cuda:0,cuda:1");
        list.devices_.emplace_back(entry);
        if (comma == std::string_view::npos) break;
        rest.remove_prefix(comma + 1);
    }
    return list;
}

void DeviceList::check_workers(int workers, std::string_view what) const {
    if (devices_.size() == 1 || static_cast<int>(devices_.size()) == workers) return;
    throw ConfigError(std::string(what) + " " + quoted(text()) + " lists " + std::to_string(devices_.size()) +
                      " devices for " + std::to_string(workers) + " worker(s) on this node: give one device for all of "
                      "them, or one per worker");
}

const std::string& DeviceList::for_worker(int local) const {
    return devices_.size() == 1 ? devices_.front() : devices_.at(static_cast<std::size_t>(local));
}

std::string DeviceList::text() const {
    std::string out;
    for (const auto& d : devices_) out += (out.empty() ? "" : ",") + d;
    return out;
}

}  // namespace thresher
