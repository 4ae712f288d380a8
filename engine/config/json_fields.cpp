#include "config/json_fields.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/error.h"

namespace thresher::config {

JsonFields::JsonFields(const nlohmann::json& object, std::string source, std::string path)
    : object_(object), source_(std::move(source)), path_(std::move(path)) {
    if (!object_.is_object()) fail("expected a JSON object, got " + std::string(object_.type_name()));
}

void JsonFields::fail(const std::string& key, const std::string& problem) const {
    throw ConfigError(source_ + ": " + path_ + ": \"" + key + "\": " + problem);
}

void JsonFields::fail(const std::string& problem) const {
    throw ConfigError(source_ + ": " + path_ + ": " + problem);
}

bool JsonFields::has(const std::string& key) const { return object_.contains(key); }

const nlohmann::json* JsonFields::get(const std::string& key) {
    used_.insert(key);
    auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
}

std::optional<int> JsonFields::integer(const std::string& key, int min, int max) {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number_integer() && !(v->is_number_float() && std::floor(v->get<double>()) == v->get<double>()))
        fail(key, "must be an integer, got " + json_summary(*v));
    const double d = v->get<double>();
    if (d < min || d > max)
        fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + json_summary(*v));
    return static_cast<int>(d);
}

std::optional<double> JsonFields::number(const std::string& key, double min, double max) {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(key, "must be a number, got " + json_summary(*v));
    const double d = v->get<double>();
    if (!(d >= min && d <= max)) {
        auto fmt = [](double x) { nlohmann::json j = x; return j.dump(); };
        fail(key, "must be in [" + fmt(min) + ", " + fmt(max) + "], got " + json_summary(*v));
    }
    return d;
}

std::optional<std::string> JsonFields::string(const std::string& key) {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(key, "must be a string, got " + json_summary(*v));
    return v->get<std::string>();
}

std::optional<bool> JsonFields::boolean(const std::string& key) {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(key, "must be true or false, got " + json_summary(*v));
    return v->get<bool>();
}

std::optional<std::array<int, 2>> JsonFields::pair(const std::string& key, int min) {
    const auto* v = get(key);
    if (!v) return std::nullopt;
    const std::string want = min > 0 ? "positive" : "non-negative";
    auto ok = [&](const nlohmann::json& e) { return e.is_number_integer() && e.get<long long>() >= min && e.get<long long>() < (1 << 20); };
    if (ok(*v)) return std::array<int, 2>{v->get<int>(), v->get<int>()};
    if (!v->is_array() || v->size() != 2 || !ok((*v)[0]) || !ok((*v)[1]))
        fail(key, "must be two " + want + " integers, got " + json_summary(*v));
    return std::array<int, 2>{(*v)[0].get<int>(), (*v)[1].get<int>()};
}

std::optional<std::size_t> JsonFields::choice(const std::string& key,
                                              const std::vector<std::string>& choices) {
    auto s = string(key);
    if (!s) return std::nullopt;
    const std::string n = normalise_name(*s);
    for (std::size_t i = 0; i < choices.size(); ++i)
        if (normalise_name(choices[i]) == n) return i;
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    fail(key, "unknown value \"" + *s + "\" (expected one of: " + list + ")");
}

const nlohmann::json* JsonFields::object(const std::string& key) {
    const auto* v = get(key);
    if (v && !v->is_object()) fail(key, "must be an object, got " + json_summary(*v));
    return v;
}

const nlohmann::json* JsonFields::array(const std::string& key) {
    const auto* v = get(key);
    if (v && !v->is_array()) fail(key, "must be an array, got " + std::string(v->type_name()));
    return v;
}

void JsonFields::finish() const {
    std::string unknown;
    for (const auto& [key, value] : object_.items())
        if (!used_.count(key)) unknown += (unknown.empty() ? "\"" : ", \"") + key + "\"";
    if (unknown.empty()) return;
    std::string known;
    for (const auto& k : used_) known += (known.empty() ? "" : ", ") + k;
    fail("unknown field " + unknown + " (known here: " + known + ")");
}

std::string normalise_name(std::string_view s) {
    std::string out;
    for (char c : s)
        if (c != '-' && c != '_' && c != ' ')
            out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

namespace {

// Appends a JSON rendering of `v` to `out`, descending at most `depth` levels and stopping once
// `out` is longer than `limit` (the caller cuts it there): the cost is bounded by the limit, not
// by the size or depth of the value.
void summarise(const nlohmann::json& v, int depth, std::string& out, std::size_t limit) {
    auto quoted = [&](const std::string& s) {
        nlohmann::json j = s.substr(0, limit + 1);
        out += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    switch (v.type()) {
        case nlohmann::json::value_t::object:
        case nlohmann::json::value_t::array: {
            const bool object = v.is_object();
            if (depth == 0 && !v.empty()) {
                out += object ? "{...}" : "[...]";
                return;
            }
            out += object ? '{' : '[';
            bool first = true;
            for (auto it = v.begin(); it != v.end() && out.size() <= limit; ++it) {
                if (!first) out += ',';
                first = false;
                if (object) {
                    quoted(it.key());
                    out += ':';
                }
                summarise(*it, depth - 1, out, limit);
            }
            out += object ? '}' : ']';
            return;
        }
        case nlohmann::json::value_t::string: quoted(v.get_ref<const std::string&>()); return;
        default: out += v.dump(); return;  // a number, boolean or null: short
    }
}

}  // namespace

std::string json_summary(const nlohmann::json& v, std::size_t max_chars) {
    std::string out;
    summarise(v, 3, out, max_chars);
    if (out.size() <= max_chars) return out;
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // whole UTF-8 characters
    out.resize(cut);
    return out + "...";
}

namespace {

// line:column (1-based) of byte `end` in `text`.
std::string line_column(std::string_view text, std::size_t end) {
    std::size_t line = 1, col = 1;
    end = std::min(end, text.size());
    for (std::size_t i = 0; i < end; ++i) {
        if (text[i] == '\n') {
            ++line;
            col = 1;
        } else {
            ++col;
        }
    }
    return std::to_string(line) + ":" + std::to_string(col);
}

// The nesting depth is checked on the text before nlohmann builds anything: its parser is
// iterative, but everything after it (dump, copies, the importers' walks) recurses, and a 400 KB
// file of '[' would overflow the stack there.
void check_depth(std::string_view text, const std::string& source) {
    int depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth)
                throw ConfigError(source + ":" + line_column(text, i) + ": invalid JSON: nested deeper than " +
                                  std::to_string(kMaxJsonDepth) + " levels");
        } else if (c == ']' || c == '}') {
            if (depth > 0) --depth;  // unbalanced text is the parser's to report
        }
    }
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& source) {
    check_depth(text, source);
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        // nlohmann reports a byte offset (1-based, at the failing character): make it line:column.
        std::string what = e.what();
        if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
        throw ConfigError(source + ":" + line_column(text, e.byte ? e.byte - 1 : 0) + ": invalid JSON: " + what);
    } catch (const nlohmann::json::exception& e) {
        // Well-formed text nlohmann still refuses, such as a number beyond double (1e999).
        std::string what = e.what();
        if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
        throw ConfigError(source + ": invalid JSON: " + what);
    }
}

}  // namespace thresher::config
