// What the DL4J and Keras importers share: a Place that names where in a foreign file we are
// ("confs[2].layer (ConvolutionLayer \"cnn1\")"), turns problems into ConfigErrors and collects
// notes; lenient, typed getters (foreign files carry many fields we do not need, and DL4J writes
// an unset number as "NaN"); and the last step every importer ends with.
#pragma once

#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/model_config.h"

namespace thresher::config::import {

// An allowed interval for a hyperparameter, open or closed at either end.
struct Range {
    double min, max;
    bool min_open = false, max_open = false;
    bool contains(double v) const;
    std::string text() const;  // "in (0, 1]", or ">= 0 (and finite)" for the open-ended ones
};
inline constexpr Range kPositive{0.0, 1e6, true, false};      // learning rates, epsilons
inline constexpr Range kNonNegative{0.0, 1e6, false, false};  // DL4J learning rates (0 allowed)
inline constexpr Range kRegularisation{0.0, 1e3, false, false};  // l1, l2 (Thresher's own bound)
inline constexpr Range kBatchNormEps{1e-12, 1.0, false, false};
inline constexpr Range kUnit{0.0, 1.0, false, false};         // momentum, decays
inline constexpr Range kUnitOpenTop{0.0, 1.0, false, true};   // betas, drop rates
inline constexpr Range kRetain{1e-6, 1.0, false, false};       // retain probabilities (Thresher's bound)

// A polymorphic value in either of Jackson's spellings, as DL4J wrote them: {"@class":
// "org.nd4j.linalg.activations.impl.ActivationReLU", fields...} (1.0.0-alpha on) or the
// wrapper object {"ReLU": {fields}} of 0.7 - 0.9.x. `name` is the simple class name or the
// wrapper key; `body` holds the fields.
struct Typed {
    std::string name;
    const nlohmann::json* body = nullptr;
    bool wrapped = false;
};
std::optional<Typed> typed(const nlohmann::json& v);

class Place {
public:
    Place(const nlohmann::json& object, std::string source, std::string where,
          std::vector<std::string>& notes);

    const nlohmann::json& json() const { return object_; }
    const std::string& where() const { return where_; }
    const std::string& source() const { return source_; }
    // Where this place's notes go (a sibling Place at another path shares them).
    std::vector<std::string>& notes() const { return notes_; }
    bool has(const std::string& key) const;  // present and not null
    // A Place for an object nested here ("<where><suffix>"), whose notes join this one's.
    Place nested(const nlohmann::json& object, const std::string& suffix) const {
        return Place(object, source_, where_ + suffix, notes_);
    }

    // Each returns nullopt when the key is absent, null or DL4J's "NaN"; a value of the wrong
    // kind is an error naming the field. The first key found of `keys` is used (DL4J spelled
    // nIn as "nIn" in some versions and "nin" in others).
    std::optional<double> number(std::initializer_list<const char*> keys);
    // A hyperparameter the model will use: like number(), but DL4J's "NaN"/"Infinity" strings and
    // values outside the range are refused, naming the field as the file spells it (a NaN learning
    // rate must never train at some default).
    std::optional<double> hyper(std::initializer_list<const char*> keys, const Range& range);
    std::optional<int> integer(std::initializer_list<const char*> keys, int min);
    std::optional<std::string> string(std::initializer_list<const char*> keys);
    std::optional<bool> boolean(std::initializer_list<const char*> keys);
    // [a, b] or one integer for both.
    std::optional<std::array<int, 2>> pair(std::initializer_list<const char*> keys, int min);
    const nlohmann::json* object(std::initializer_list<const char*> keys);
    const nlohmann::json* array(std::initializer_list<const char*> keys);
    // Marks keys as understood without reading them (defaults we match, performance hints).
    void ignore(std::initializer_list<const char*> keys);

    // The fields nobody read or ignored, as one note, so nothing is dropped silently.
    void note_unread();
    void note(const std::string& text);
    [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
    [[noreturn]] void fail(const std::string& problem) const;

private:
    const nlohmann::json* find(std::initializer_list<const char*> keys, std::string* used = nullptr,
                               bool keep_nan = false);

    const nlohmann::json& object_;
    std::string source_, where_;
    std::vector<std::string>& notes_;
    std::set<std::string> read_;
};

// Loose reads for values that only steer a lookup (class names, optional numbers): the string or
// number at `key`, `fallback` when absent or null, and "" / NaN when it has another type, which
// the caller's lookup or range check then refuses with a located message.
std::string text_or(const nlohmann::json& o, const char* key, const std::string& fallback);
double number_or(const nlohmann::json& o, const char* key, double fallback);

// The shortest decimal that reads back as the same value: 0.0005 as "0.0005" (std::to_string
// would say "0.000500"), and a float 0.01 as "0.01", never 0.009999999776482582.
std::string number_text(double v);
std::string number_text(float v);

// "org.deeplearning4j.nn.conf.layers.DenseLayer" -> "DenseLayer".
std::string simple_class_name(const std::string& java_class);

// Runs the imported config through the very checks Thresher JSON gets (field validation, then
// shape inference), so an import can never produce a config our own parser would refuse.
ModelConfig validated(const ModelConfig& m, const std::string& source);

// Picks the model-wide updater, init and l1/l2 from the first layer with parameters and keeps a
// per-layer override only where a layer differs (DL4J stores them on every layer).
void hoist_layer_defaults(ModelConfig& m);

bool same_updater(const UpdaterSpec& a, const UpdaterSpec& b);

// A symmetric zero padding layer right before a convolution in Truncate mode becomes that
// convolution's padding (exact: a valid convolution over the zero-padded input), one layer less
// and padded on the fly by oneDNN/cuDNN. Call with the convolution before it is appended.
void fold_zero_padding(std::vector<LayerConfig>& layers, LayerConfig& conv);

}  // namespace thresher::config::import
