// ThresholdSpec: text and JSON forms, the τ merge both front ends share, and the algorithm it
// builds. The numbers' ranges are the algorithms' own (their constructors check them), so there
// is one set of rules.
#include "codec/threshold_spec.h"

#include "codec/threshold_algorithm.h"
#include "core/error.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <vector>

namespace thresher::dist {
namespace {

// Shortest decimal that reads back as the same double.
std::string number(double v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
    return std::string(buf, ec == std::errc() ? end : buf);
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> parts;
    for (;;) {
        const std::size_t at = s.find(sep);
        parts.push_back(s.substr(0, at));
        if (at == std::string_view::npos) return parts;
        s.remove_prefix(at + 1);
    }
}

double parse_number(std::string_view field) {
    double v = 0;
    const auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
    if (field.empty() || ec != std::errc() || end != field.data() + field.size())
        throw ConfigError("\"" + std::string(field.substr(0, 60)) + (field.size() > 60 ? "..." : "") + "\" is not a number");
    return v;
}

// Text as an error shows it: at most 60 characters of it (a hostile spec may hold megabytes).
std::string clipped(std::string_view text) {
    return text.size() > 60 ? std::string(text.substr(0, 57)) + "..." : std::string(text);
}
std::string shown(const nlohmann::json& v) { return clipped(v.dump()); }

std::optional<ThresholdKind> kind_named(std::string_view name) {
    for (const auto& n : threshold_algorithm_names())
        if (name == n.name) return n.kind;
    return std::nullopt;
}

std::string unknown_name(std::string_view name) {
    return "unknown threshold algorithm \"" + clipped(name) + "\" (expected " + threshold_algorithm_grammar() + ")";
}

// The optional numbers of each kind, in their text positions.
std::vector<std::optional<double> ThresholdSpec::*> positions(ThresholdKind kind) {
    switch (kind) {
    case ThresholdKind::Fixed: return {&ThresholdSpec::threshold};
    case ThresholdKind::Adaptive:
        return {&ThresholdSpec::threshold, &ThresholdSpec::min_density, &ThresholdSpec::max_density, &ThresholdSpec::decay};
    case ThresholdKind::Target: return {&ThresholdSpec::density, &ThresholdSpec::threshold, &ThresholdSpec::decay};
    }
    return {};
}

// Each number's JSON key, in the object form.
struct Key {
    const char* name;
    std::optional<double> ThresholdSpec::* field;
};
constexpr Key kKeys[] = {{"threshold", &ThresholdSpec::threshold},
                         {"min_density", &ThresholdSpec::min_density},
                         {"max_density", &ThresholdSpec::max_density},
                         {"density", &ThresholdSpec::density},
                         {"decay", &ThresholdSpec::decay}};

const ThresholdAlgorithmName& entry(ThresholdKind kind) {
    for (const auto& n : threshold_algorithm_names())
        if (n.kind == kind) return n;
    return threshold_algorithm_names().front();
}

// Every number in range (the algorithms' constructors check); fixed without τ is left to
// resolve_threshold, where a separate τ may still come.
void check_numbers(const ThresholdSpec& spec) {
    if (spec.kind == ThresholdKind::Fixed && !spec.threshold) return;
    (void)make_threshold_algorithm(spec);
}

}  // namespace

const std::array<ThresholdAlgorithmName, 3>& threshold_algorithm_names() {
    static const std::array<ThresholdAlgorithmName, 3> names{{
        {ThresholdKind::Fixed, "fixed", "fixed[:τ]"},
        {ThresholdKind::Adaptive, "adaptive", "adaptive[:τ[:min[:max[:decay]]]]"},
        {ThresholdKind::Target, "target", "target[:density[:τ[:decay]]]"},
    }};
    return names;
}

const char* to_string(ThresholdKind kind) { return entry(kind).name; }

std::string threshold_algorithm_grammar() {
    const auto& n = threshold_algorithm_names();
    return std::string(n[0].grammar) + ", " + n[1].grammar + " or " + n[2].grammar;
}

ThresholdSpec parse_threshold_spec(std::string_view text, std::string_view field) {
    const std::string where = (field.empty() ? "" : std::string(field) + ": ") + "\"" + clipped(text) + "\": ";
    const std::vector<std::string_view> parts = split(text, ':');
    const auto kind = kind_named(parts.front());
    if (!kind) throw ConfigError(where + unknown_name(parts.front()));
    ThresholdSpec spec;
    spec.kind = *kind;
    const auto slots = positions(*kind);
    try {
        if (parts.size() - 1 > slots.size()) throw ConfigError("expected " + std::string(entry(*kind).grammar));
        for (std::size_t i = 1; i < parts.size(); ++i) spec.*slots[i - 1] = parse_number(parts[i]);
        check_numbers(spec);
    } catch (const ConfigError& e) {
        throw ConfigError(where + e.what());
    }
    return spec;
}

ThresholdSpec threshold_spec_from_json(const nlohmann::json& value, std::string_view field) {
    const std::string name(field);
    if (value.is_string()) return parse_threshold_spec(value.get_ref<const std::string&>(), field);
    if (!value.is_object())
        throw ConfigError(name + ": must be a string (" + threshold_algorithm_grammar() +
                          ") or an object {\"algorithm\", \"threshold\", …}, got " + shown(value));
    const auto algorithm = value.find("algorithm");
    if (algorithm == value.end() || !algorithm->is_string())
        throw ConfigError(name + ".algorithm: missing (one of fixed, adaptive, target)");
    const auto kind = kind_named(algorithm->get_ref<const std::string&>());
    if (!kind) throw ConfigError(name + ".algorithm: " + unknown_name(algorithm->get_ref<const std::string&>()));
    ThresholdSpec spec;
    spec.kind = *kind;
    const auto slots = positions(*kind);
    for (const auto& [key, v] : value.items()) {
        if (key == "algorithm") continue;
        const Key* k = nullptr;
        for (const auto& candidate : kKeys)
            if (key == candidate.name) k = &candidate;
        if (!k || std::find(slots.begin(), slots.end(), k->field) == slots.end())
            throw ConfigError(name + "." + clipped(key) + ": not a field of " + to_string(*kind) + " (" + entry(*kind).grammar + ")");
        if (!v.is_number()) throw ConfigError(name + "." + k->name + ": must be a number, got " + shown(v));
        spec.*(k->field) = v.get<double>();
    }
    try {
        check_numbers(spec);
    } catch (const ConfigError& e) {
        throw ConfigError(name + ": " + e.what());
    }
    return spec;
}

std::string to_text(const ThresholdSpec& spec) {
    const auto slots = positions(spec.kind);
    std::size_t last = 0;  // numbers to write
    for (std::size_t i = 0; i < slots.size(); ++i)
        if (spec.*slots[i]) last = i + 1;
    // A default stands in for an unset number before a set one (text is positional).
    const ThresholdSpec defaults{spec.kind,
                                 spec.kind == ThresholdKind::Target ? TargetDensityThreshold::kDefaultInitial
                                                                    : AdaptiveThreshold::kDefaultInitial,
                                 AdaptiveThreshold::kDefaultMinDensity,
                                 AdaptiveThreshold::kDefaultMaxDensity,
                                 TargetDensityThreshold::kDefaultDensity,
                                 default_threshold_decay()};
    std::string text = to_string(spec.kind);
    for (std::size_t i = 0; i < last; ++i) {
        text += ':';  // (not ":" + number(…): GCC 12 warns falsely, -Wrestrict)
        text += number((spec.*slots[i]).value_or(*(defaults.*slots[i])));
    }
    return text;
}

nlohmann::json to_json(const ThresholdSpec& spec) {
    nlohmann::json o{{"algorithm", to_string(spec.kind)}};
    for (const auto& k : kKeys)
        if (spec.*(k.field)) o[k.name] = *(spec.*(k.field));
    return o;
}

ThresholdSpec resolve_threshold(ThresholdSpec spec, std::optional<double> threshold, const ThresholdFields& fields) {
    if (threshold) {
        if (spec.threshold)
            throw ConfigError(fields.threshold + ": " + number(*threshold) + " conflicts with " + fields.algorithm + " \"" +
                              to_text(spec) + "\", which sets τ already");
        spec.threshold = threshold;
        try {
            check_numbers(spec);
        } catch (const ConfigError& e) {
            throw ConfigError(fields.threshold + ": " + e.what());
        }
    }
    if (spec.kind == ThresholdKind::Fixed && !spec.threshold)
        throw ConfigError(fields.algorithm + ": \"fixed\" needs its threshold: fixed:<τ>, or " + fields.threshold);
    return spec;
}

std::unique_ptr<ThresholdAlgorithm> make_threshold_algorithm(const ThresholdSpec& s) {
    switch (s.kind) {
    case ThresholdKind::Fixed:
        if (!s.threshold) throw ConfigError("expected fixed:<threshold>");
        return std::make_unique<FixedThreshold>(*s.threshold);
    case ThresholdKind::Adaptive:
        return std::make_unique<AdaptiveThreshold>(s.threshold.value_or(AdaptiveThreshold::kDefaultInitial),
                                                   s.min_density.value_or(AdaptiveThreshold::kDefaultMinDensity),
                                                   s.max_density.value_or(AdaptiveThreshold::kDefaultMaxDensity),
                                                   s.decay.value_or(default_threshold_decay()));
    case ThresholdKind::Target:
        return std::make_unique<TargetDensityThreshold>(s.density.value_or(TargetDensityThreshold::kDefaultDensity),
                                                        s.threshold.value_or(TargetDensityThreshold::kDefaultInitial),
                                                        s.decay.value_or(default_threshold_decay()));
    }
    throw ConfigError("unknown threshold algorithm");
}

}  // namespace thresher::dist
