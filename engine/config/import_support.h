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

namespace thresher::nn::import {

class Place {
public:
    Place(const nlohmann::json& object, std::string source, std::string where,
          std::vector<std::string>& notes);

    const nlohmann::json& json() const { return object_; }
    const std::string& where() const { return where_; }
    const std::string& source() const { return source_; }
    bool has(const std::string& key) const;  // present and not null

    // Each returns nullopt when the key is absent, null or DL4J's "NaN"; a value of the wrong
    // kind is an error naming the field. The first key found of `keys` is used (DL4J spelled
    // nIn as "nIn" in some versions and "nin" in others).
    std::optional<double> number(std::initializer_list<const char*> keys);
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
    const nlohmann::json* find(std::initializer_list<const char*> keys, std::string* used = nullptr);

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

// 0.0005 as "0.0005" (std::to_string would say "0.000500").
std::string number_text(double v);

// "org.deeplearning4j.nn.conf.layers.DenseLayer" -> "DenseLayer".
std::string simple_class_name(const std::string& java_class);

// Runs the imported config through the very checks Thresher JSON gets (field validation, then
// shape inference), so an import can never produce a config our own parser would refuse.
ModelConfig validated(const ModelConfig& m, const std::string& source);

// Picks the model-wide updater, init and l1/l2 from the first layer with parameters and keeps a
// per-layer override only where a layer differs (DL4J stores them on every layer).
void hoist_layer_defaults(ModelConfig& m);

bool same_updater(const UpdaterSpec& a, const UpdaterSpec& b);

}  // namespace thresher::nn::import
