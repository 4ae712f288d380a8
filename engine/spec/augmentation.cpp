#include "spec/augmentation.h"

#include <charconv>

#include "core/error.h"

namespace thresher::spec {

namespace {

constexpr int kMaxPadding = 64;

[[noreturn]] void refuse(std::string_view text, const std::string& why) {
    throw ConfigError("augmentation \"" + std::string(text) + "\": " + why +
                      " (expected \"none\" or parts \"crop:P\" with P from 1 to " + std::to_string(kMaxPadding) +
                      " and \"flip\", comma-separated, e.g. \"crop:4,flip\")");
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

Augmentation Augmentation::parse(std::string_view text) {
    Augmentation a;
    const std::string_view all = trim(text);
    if (all.empty()) refuse(text, "empty");
    if (all == "none") return a;
    bool crop_seen = false;
    std::string_view rest = all;
    while (true) {
        const std::size_t comma = rest.find(',');
        const std::string_view part = trim(rest.substr(0, comma));
        if (part == "flip") {
            if (a.flip) refuse(text, "\"flip\" given twice");
            a.flip = true;
        } else if (part.substr(0, 5) == "crop:") {
            if (crop_seen) refuse(text, "\"crop\" given twice");
            crop_seen = true;
            const std::string_view number = part.substr(5);
            int p = 0;
            const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), p);
            if (ec != std::errc{} || end != number.data() + number.size() || p < 1 || p > kMaxPadding) {
                std::string why(1, '"');  // appended piece by piece: GCC 12 warns wrongly on "\"" + string
                why.append(part).append("\": the padding must be a whole number from 1 to ").append(std::to_string(kMaxPadding));
                refuse(text, why);
            }
            a.crop_padding = p;
        } else {
            refuse(text, part.empty() ? "an empty part" : "unknown part \"" + std::string(part) + "\"");
        }
        if (comma == std::string_view::npos) break;
        rest = rest.substr(comma + 1);
    }
    return a;
}

std::string Augmentation::text() const {
    if (!active()) return "none";
    std::string s;
    if (crop_padding > 0) s = "crop:" + std::to_string(crop_padding);
    if (flip) s += s.empty() ? "flip" : ",flip";
    return s;
}

}  // namespace thresher::spec
