// A threshold algorithm as the user chose it, typed once where it enters: thresher-engine's
// --threshold-algorithm (with --threshold), a run spec's training.threshold_algorithm (with
// training.threshold), the app's form. Both front ends call the same parse and the same
// resolve_threshold(), so the engine and the launcher accept and refuse exactly the same inputs,
// each naming the field in its own terms (a flag, or a JSON path). make_threshold_algorithm()
// turns a resolved spec into the algorithm a worker runs (threshold_algorithm.h).
//
// Text (the command line, and the run spec's string form); numbers in any form from_chars reads:
//   fixed[:<τ>]                                       fixed without τ needs --threshold
//   adaptive[:<τ>[:<min density>[:<max density>[:<decay>]]]]
//   target[:<density>[:<τ>[:<decay>]]]
// JSON: that text as a string, or an object naming the fields, e.g.
//   {"algorithm": "adaptive", "threshold": 1e-3, "min_density": 1e-4, "max_density": 1e-2, "decay": 0.97}
// Unset numbers take the algorithm's defaults (threshold_algorithm.h). to_text() writes the set
// numbers in their positions, a default standing in for an unset one before a set one, so
// parse_threshold_spec(to_text(s)) equals s whenever s was parsed from text.
//
// No Qt, no oneDNN: the launcher links this (the codec library) for its run-spec validation.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace thresher::dist {

class ThresholdAlgorithm;

enum class ThresholdKind { Fixed, Adaptive, Target };

// The one list of algorithm names: the parsers, the help texts, the launcher and the app's form
// all read it.
struct ThresholdAlgorithmName {
    ThresholdKind kind;
    const char* name;     // "adaptive"
    const char* grammar;  // "adaptive[:τ[:min[:max[:decay]]]]"
};
const std::array<ThresholdAlgorithmName, 3>& threshold_algorithm_names();
const char* to_string(ThresholdKind kind);
// "fixed[:τ], adaptive[:τ[:min[:max[:decay]]]] or target[:density[:τ[:decay]]]"
std::string threshold_algorithm_grammar();

struct ThresholdSpec {
    ThresholdKind kind = ThresholdKind::Adaptive;
    std::optional<double> threshold;    // τ: fixed's τ, the adaptive algorithms' first τ
    std::optional<double> min_density;  // adaptive
    std::optional<double> max_density;  // adaptive
    std::optional<double> density;      // target
    std::optional<double> decay;        // adaptive, target

    bool operator==(const ThresholdSpec&) const = default;
};

// The names of the two inputs in the user's terms, for errors.
struct ThresholdFields {
    std::string algorithm = "--threshold-algorithm";
    std::string threshold = "--threshold";
};

// Text as above. Throws ConfigError "<field>: \"<text>\": <problem>" for an unknown name, a bad
// number, a number out of its range or too many numbers (without "<field>: " when field is empty:
// CLI11 puts the flag's name in front itself).
ThresholdSpec parse_threshold_spec(std::string_view text, std::string_view field = "--threshold-algorithm");
// A JSON string (as parse_threshold_spec) or object (above). Throws ConfigError naming `field`,
// or "<field>.<key>" for a field of the object.
ThresholdSpec threshold_spec_from_json(const nlohmann::json& value, std::string_view field);
std::string to_text(const ThresholdSpec& spec);
// The object form, with only the set numbers.
nlohmann::json to_json(const ThresholdSpec& spec);

// The spec a run uses: `spec` with a separate τ (--threshold, training.threshold) put in, then
// checked complete. Throws ConfigError naming the field: a τ given twice, fixed without a τ, a τ
// out of range.
ThresholdSpec resolve_threshold(ThresholdSpec spec, std::optional<double> threshold, const ThresholdFields& fields = {});

// The algorithm of a complete spec. Throws ConfigError for fixed without τ or a number out of range.
std::unique_ptr<ThresholdAlgorithm> make_threshold_algorithm(const ThresholdSpec& spec);

}  // namespace thresher::dist
