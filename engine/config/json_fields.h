// Strict, located reading of one JSON object: every getter checks the type and range and throws a
// ConfigError naming "<source>: <path>: \"<field>\": <problem>"; finish() rejects fields nobody
// asked for, so a typo such as "kernal" is an error instead of a silently ignored default.
#pragma once

#include <array>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace thresher::config {

class JsonFields {
public:
    JsonFields(const nlohmann::json& object, std::string source, std::string path);

    bool has(const std::string& key) const;
    std::optional<int> integer(const std::string& key, int min, int max);
    std::optional<double> number(const std::string& key, double min, double max);
    std::optional<std::string> string(const std::string& key);
    std::optional<bool> boolean(const std::string& key);
    // A pair [a, b] or a single integer used for both.
    std::optional<std::array<int, 2>> pair(const std::string& key, int min);
    // One of `choices` (case-insensitive; '-', '_' and spaces ignored), returned as its index.
    std::optional<std::size_t> choice(const std::string& key, const std::vector<std::string>& choices);
    const nlohmann::json* object(const std::string& key);
    const nlohmann::json* array(const std::string& key);
    // The value as it is (null when absent or null), for fields of several shapes.
    const nlohmann::json* value(const std::string& key) { return get(key); }

    // Throws if the object has fields that no getter asked for.
    void finish() const;

    [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
    [[noreturn]] void fail(const std::string& problem) const;
    const std::string& path() const { return path_; }
    const std::string& source() const { return source_; }

private:
    const nlohmann::json* get(const std::string& key);

    const nlohmann::json& object_;
    std::string source_;
    std::string path_;
    std::set<std::string> used_;
};

// The deepest nesting of arrays and objects any JSON input may have (Thresher's own configs use
// 4, Keras and DL4J files under 10).
constexpr int kMaxJsonDepth = 64;

// Parses JSON text; a syntax error, or nesting deeper than kMaxJsonDepth (checked before anything
// is built), names the source, line and column. Every JSON text the engine reads comes here.
nlohmann::json parse_json_text(std::string_view text, const std::string& source);
// A short rendering of a value for error messages: at most `max_chars` characters (then "..."),
// at most 3 levels deep, at a cost bounded by `max_chars` whatever the value's size.
std::string json_summary(const nlohmann::json& v, std::size_t max_chars = 80);
// Normalises an enum spelling: lower case, without '-', '_' or spaces.
std::string normalise_name(std::string_view s);

}  // namespace thresher::config
