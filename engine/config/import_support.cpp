#include "config/import_support.h"

#include <charconv>
#include <cmath>

#include "core/error.h"

namespace thresher::config::import {

Place::Place(const nlohmann::json& object, std::string source, std::string where,
             std::vector<std::string>& notes)
    : object_(object), source_(std::move(source)), where_(std::move(where)), notes_(notes) {
    if (!object_.is_object()) fail("expected a JSON object, got " + std::string(object_.type_name()));
}

void Place::fail(const std::string& key, const std::string& problem) const {
    throw ConfigError(source_ + ": " + where_ + ": \"" + key + "\": " + problem);
}

void Place::fail(const std::string& problem) const {
    throw ConfigError(source_ + ": " + where_ + ": " + problem);
}

void Place::note(const std::string& text) { notes_.push_back(where_ + ": " + text); }

bool Place::has(const std::string& key) const {
    auto it = object_.find(key);
    return it != object_.end() && !it->is_null();
}

bool Range::contains(double v) const {
    return std::isfinite(v) && (min_open ? v > min : v >= min) && (max_open ? v < max : v <= max);
}

std::string Range::text() const {
    // The open-ended ranges (up to 1e6, a sanity bound) read as what they mean.
    if (max >= 1e6 && !max_open) return std::string(min_open ? "> " : ">= ") + number_text(min) + " (and finite)";
    return std::string(min_open ? "in (" : "in [") + number_text(min) + ", " + number_text(max) + (max_open ? ")" : "]");
}

std::optional<Typed> typed(const nlohmann::json& v) {
    if (!v.is_object()) return std::nullopt;
    if (auto it = v.find("@class"); it != v.end()) {
        if (!it->is_string()) return std::nullopt;
        return Typed{simple_class_name(it->get<std::string>()), &v, false};
    }
    if (v.size() == 1 && v.begin().value().is_object()) return Typed{v.begin().key(), &v.begin().value(), true};
    return std::nullopt;
}

const nlohmann::json* Place::find(std::initializer_list<const char*> keys, std::string* used, bool keep_nan) {
    for (const char* k : keys) read_.insert(k);
    for (const char* k : keys) {
        auto it = object_.find(k);
        if (it == object_.end() || it->is_null()) continue;
        // DL4J (Jackson) writes NaN as a string for numbers that were never set.
        if (!keep_nan && it->is_string() && it->get<std::string>() == "NaN") continue;
        if (used) *used = k;
        return &*it;
    }
    return nullptr;
}

void Place::ignore(std::initializer_list<const char*> keys) {
    for (const char* k : keys) read_.insert(k);
}

std::optional<double> Place::number(std::initializer_list<const char*> keys) {
    std::string key;
    const auto* v = find(keys, &key);
    if (!v) return std::nullopt;
    if (!v->is_number()) fail(key, "must be a number, got " + v->dump());
    const double d = v->get<double>();
    if (!std::isfinite(d)) fail(key, "must be finite, got " + v->dump());
    return d;
}

std::optional<double> Place::hyper(std::initializer_list<const char*> keys, const Range& range) {
    std::string key;
    const auto* v = find(keys, &key, true);
    if (!v) return std::nullopt;
    // Jackson writes NaN and infinities as the strings "NaN", "Infinity", "-Infinity".
    if (v->is_string() || !v->is_number() || !range.contains(v->get<double>()))
        fail(key, "must be a number " + range.text() + ", got " + v->dump());
    return v->get<double>();
}

std::optional<int> Place::integer(std::initializer_list<const char*> keys, int min) {
    std::string key;
    const auto* v = find(keys, &key);
    if (!v) return std::nullopt;
    if (!v->is_number() || std::floor(v->get<double>()) != v->get<double>())
        fail(key, "must be an integer, got " + v->dump());
    const double d = v->get<double>();
    if (d < min || d > (1 << 24)) fail(key, "must be in [" + std::to_string(min) + ", 16777216], got " + v->dump());
    return static_cast<int>(d);
}

std::optional<std::string> Place::string(std::initializer_list<const char*> keys) {
    std::string key;
    const auto* v = find(keys, &key);
    if (!v) return std::nullopt;
    if (!v->is_string()) fail(key, "must be a string, got " + v->dump());
    return v->get<std::string>();
}

std::optional<bool> Place::boolean(std::initializer_list<const char*> keys) {
    std::string key;
    const auto* v = find(keys, &key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) fail(key, "must be true or false, got " + v->dump());
    return v->get<bool>();
}

std::optional<std::array<int, 2>> Place::pair(std::initializer_list<const char*> keys, int min) {
    std::string key;
    const auto* v = find(keys, &key);
    if (!v) return std::nullopt;
    auto ok = [&](const nlohmann::json& e) {
        return e.is_number_integer() && e.get<long long>() >= min && e.get<long long>() < (1 << 20);
    };
    if (ok(*v)) return std::array<int, 2>{v->get<int>(), v->get<int>()};
    if (!v->is_array() || v->size() != 2 || !ok((*v)[0]) || !ok((*v)[1]))
        fail(key, "must be two " + std::string(min > 0 ? "positive" : "non-negative") +
                      " integers (height, width), got " + v->dump());
    return std::array<int, 2>{(*v)[0].get<int>(), (*v)[1].get<int>()};
}

const nlohmann::json* Place::object(std::initializer_list<const char*> keys) {
    std::string key;
    const auto* v = find(keys, &key);
    if (v && !v->is_object()) fail(key, "must be an object, got " + v->dump());
    return v;
}

const nlohmann::json* Place::array(std::initializer_list<const char*> keys) {
    std::string key;
    const auto* v = find(keys, &key);
    if (v && !v->is_array()) fail(key, "must be an array, got " + std::string(v->type_name()));
    return v;
}

void Place::note_unread() {
    std::string unread;
    for (const auto& [key, value] : object_.items())
        if (!read_.count(key) && !value.is_null()) unread += (unread.empty() ? "\"" : ", \"") + key + "\"";
    if (!unread.empty()) note("ignored field(s) " + unread + " (not used by Thresher)");
}

std::string text_or(const nlohmann::json& o, const char* key, const std::string& fallback) {
    if (!o.is_object()) return fallback;
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return fallback;
    return it->is_string() ? it->get<std::string>() : std::string{};
}

double number_or(const nlohmann::json& o, const char* key, double fallback) {
    if (!o.is_object()) return fallback;
    auto it = o.find(key);
    if (it == o.end() || it->is_null()) return fallback;
    return it->is_number() ? it->get<double>() : std::nan("");
}

std::string number_text(double v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
    return ec == std::errc{} ? std::string(buf, end) : std::string("?");
}

std::string number_text(float v) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
    return ec == std::errc{} ? std::string(buf, end) : std::string("?");
}

std::string simple_class_name(const std::string& java_class) {
    const auto dot = java_class.find_last_of(".$");
    return dot == std::string::npos ? java_class : java_class.substr(dot + 1);
}

namespace {

// Thresher JSON cannot hold NaN (it would be written as null and read back as the default), so a
// non-finite value an importer let through is caught here, before the round trip hides it.
void check_finite(const ModelConfig& m, const std::string& source) {
    auto updater_ok = [](const UpdaterSpec& u) {
        for (float v : {u.learning_rate, u.momentum, u.beta1, u.beta2, u.epsilon, u.rms_decay, u.l1, u.l2})
            if (!std::isfinite(v)) return false;
        return true;
    };
    if (!updater_ok(m.updater) || !std::isfinite(m.l1) || !std::isfinite(m.l2))
        throw ConfigError(source + ": the model's updater or regularisation is not a finite number");
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const auto& l = m.layers[i];
        bool ok = std::isfinite(l.activation.alpha) && std::isfinite(l.retain) && std::isfinite(l.bn_eps) &&
                  std::isfinite(l.bn_decay) && (!l.updater || updater_ok(*l.updater));
        for (const auto& r : {l.l1, l.l2}) ok = ok && (!r || std::isfinite(*r));
        if (!ok) throw ConfigError(source + ": " + l.label(i) + ": a hyperparameter is not a finite number");
    }
}

}  // namespace

ModelConfig validated(const ModelConfig& m, const std::string& source) {
    check_finite(m, source);
    // Shapes first, on the layers that still know where they came from, so a shape problem is
    // named in the file's terms; then the field checks Thresher JSON gets.
    ModelConfig located = m;
    located.infer_shapes(source);
    ModelConfig out;
    try {
        out = ModelConfig::from_json(located.to_json(), source);  // located knows its outputs
    } catch (const ConfigError& e) {
        // The field checks name Thresher's layers[i]: say where that layer is in the file.
        std::string msg = e.what();
        for (std::size_t i = 0; i < m.layers.size(); ++i) {
            LayerConfig plain = m.layers[i];
            plain.origin.clear();
            const std::string ours = source + ": " + plain.label(i);
            if (!m.layers[i].origin.empty() && msg.rfind(ours, 0) == 0)
                throw ConfigError(source + ": " + m.layers[i].label(i) + msg.substr(ours.size()));
        }
        throw;
    }
    for (std::size_t i = 0; i < out.layers.size() && i < m.layers.size(); ++i) {
        out.layers[i].origin = m.layers[i].origin;
        out.layers[i].origin_what = m.layers[i].origin_what;
    }
    return out;
}

bool same_updater(const UpdaterSpec& a, const UpdaterSpec& b) {
    return a.kind == b.kind && a.learning_rate == b.learning_rate && a.momentum == b.momentum &&
           a.beta1 == b.beta1 && a.beta2 == b.beta2 && a.epsilon == b.epsilon &&
           a.rms_decay == b.rms_decay;
}

void hoist_layer_defaults(ModelConfig& m) {
    const LayerConfig* first = nullptr;
    for (const auto& l : m.layers)
        if (l.updater || l.weight_init || l.l1 || l.l2) {
            first = &l;
            break;
        }
    if (!first) return;
    if (first->updater) m.updater = *first->updater;
    if (first->weight_init) m.weight_init = *first->weight_init;
    m.l1 = first->l1.value_or(0.f);
    m.l2 = first->l2.value_or(0.f);
    for (auto& l : m.layers) {
        if (l.updater && same_updater(*l.updater, m.updater)) l.updater.reset();
        if (l.weight_init == m.weight_init) l.weight_init.reset();
        if (l.l1 && *l.l1 == m.l1) l.l1.reset();
        if (l.l2 && *l.l2 == m.l2) l.l2.reset();
    }
}

void fold_zero_padding(std::vector<LayerConfig>& layers, LayerConfig& conv) {
    if (layers.empty() || conv.type != LayerType::Convolution || conv.mode != ConvMode::Truncate) return;
    const auto& z = layers.back();
    if (z.type != LayerType::ZeroPadding || z.margins[0] != z.margins[1] || z.margins[2] != z.margins[3]) return;
    conv.padding = {conv.padding[0] + z.margins[0], conv.padding[1] + z.margins[2]};
    layers.pop_back();
}

}  // namespace thresher::config::import
