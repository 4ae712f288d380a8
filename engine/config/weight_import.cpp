#include "config/weight_import.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "config/dl4j_layout.h"
#include "config/dl4j_normalizer.h"
#include "config/hdf5_file.h"
#include "config/keras_recurrent.h"
#include "config/import_support.h"
#include "config/json_fields.h"
#include "config/nd4j_array.h"
#include "config/zip_archive.h"
#include "core/error.h"

namespace thresher::config {

namespace {

using Floats = Hdf5File::Floats;

std::string dims(std::initializer_list<std::uint64_t> d) {
    Floats f;
    f.dims.assign(d.begin(), d.end());
    return f.dims_str();
}

// Names a layer as the file does ("confs[2] (ConvolutionLayer \"cnn1\"; Thresher layers[1] convolution)").
[[noreturn]] void refuse(const std::string& source, const ModelConfig& m, std::size_t i, const std::string& what) {
    throw ConfigError(source + ": " + m.layers[i].label(i) + ": " + what);
}

// Copies weights into Thresher's buffer, refusing NaN and infinities (a diverged model).
class Sink {
public:
    Sink(const std::string& source, const ModelConfig& m, std::vector<float>& params) : source_(source), m_(m), p_(params) {}
    const std::string& source() const { return source_; }
    float* at(std::size_t layer, ParamRole role) {
        for (const auto& b : m_.layers[layer].blocks)
            if (b.role == role) return p_.data() + m_.layers[layer].param_offset + b.offset;
        refuse(source_, m_, layer, "has no such parameter block");
    }
    void check(std::size_t layer, const char* what, const float* v, std::size_t n) const {
        for (std::size_t k = 0; k < n; ++k)
            if (!std::isfinite(v[k]))
                refuse(source_, m_, layer, std::string(what) + " holds a NaN or infinite value (at " + std::to_string(k) + ")");
    }

private:
    const std::string& source_;
    const ModelConfig& m_;
    std::vector<float>& p_;
};

bool has_params(const LayerConfig& l) { return l.param_count > 0; }

// The parameter blocks this file knows how to fill, per layer type; a layer with others (a
// learned activation, say) is refused rather than left half initialised.
void check_known_blocks(const std::string& source, const ModelConfig& m, std::size_t i) {
    const auto& l = m.layers[i];
    std::vector<ParamRole> want;
    switch (l.type) {
        case LayerType::Dense:
        case LayerType::Output:
        case LayerType::Convolution: want = {ParamRole::Weight, ParamRole::Bias}; break;
        case LayerType::BatchNorm: want = {ParamRole::Gamma, ParamRole::Beta, ParamRole::RunningMean, ParamRole::RunningVar}; break;
        case LayerType::PRelu: want = {ParamRole::Alpha}; break;
        case LayerType::DepthwiseConvolution: want = {ParamRole::Weight, ParamRole::Bias}; break;
        case LayerType::SeparableConvolution: want = {ParamRole::Depthwise, ParamRole::Weight, ParamRole::Bias}; break;
        case LayerType::TransposedConvolution: want = {ParamRole::Weight, ParamRole::Bias}; break;
        case LayerType::Convolution1d: want = {ParamRole::Weight, ParamRole::Bias}; break;
        case LayerType::Embedding: want = {ParamRole::Weight}; break;
        case LayerType::Lstm:
        case LayerType::SimpleRnn: return;  // one run over the whole slice (dl4j_recurrent_index)
        default: break;
    }
    std::vector<ParamRole> have;
    for (const auto& b : l.blocks) have.push_back(b.role);
    if (have != want) refuse(source, m, i, "importing weights into this layer's parameters is not supported yet");
}

std::string stem(const std::string& source) {
    auto s = std::filesystem::path(source).stem().string();
    return s.empty() ? "model" : s;
}

// ---------------------------------------------------------------- DL4J model zips

// The layer object of confs[k] (or of a graph's vertices["name"]) in either of DL4J's spellings
// ({"@class": ...} or {"dense": {...}}), through a FrozenLayer wrapper.
const nlohmann::json* dl4j_layer_body(const nlohmann::json& config, const std::string& origin) {
    auto unwrap = [](const nlohmann::json& layer) -> const nlohmann::json* {
        auto t = import::typed(layer);
        // FrozenLayer ("layer"), FrozenLayerWithBackprop and LastTimeStep ("underlying"),
        // Bidirectional ("fwd": both directions are the same layer).
        for (int depth = 0; depth < 4 && t && t->body; ++depth) {
            const bool frozen = t->name == "FrozenLayer" || t->name == "FrozenLayerWithBackprop" || t->name == "LastTimeStep";
            if (!frozen && t->name != "Bidirectional") break;
            const char* key = t->name == "Bidirectional" ? "fwd" : t->body->contains("underlying") ? "underlying" : "layer";
            if (!t->body->contains(key)) return nullptr;
            t = import::typed((*t->body)[key]);
        }
        return t && t->body && t->body->is_object() ? t->body : nullptr;
    };
    if (origin.rfind("vertices[\"", 0) == 0 && origin.size() > 12) {
        const std::string name = origin.substr(10, origin.size() - 12);
        const auto v = config.find("vertices");
        if (v == config.end() || !v->is_object() || !v->contains(name)) return nullptr;
        const auto t = import::typed((*v)[name]);
        if (!t || !t->body || !t->body->contains("layerConf")) return nullptr;
        const auto& conf = (*t->body)["layerConf"];
        return conf.is_object() && conf.contains("layer") ? unwrap(conf["layer"]) : nullptr;
    }
    if (origin.rfind("confs[", 0) != 0) return nullptr;
    const std::size_t k = std::strtoul(origin.c_str() + 6, nullptr, 10);
    const auto it = config.find("confs");
    if (it == config.end() || !it->is_array() || k >= it->size()) return nullptr;
    const auto& conf = (*it)[k];
    if (!conf.is_object() || !conf.contains("layer")) return nullptr;
    return unwrap(conf["layer"]);
}

bool flag(const nlohmann::json* body, const char* key, bool fallback) {
    if (!body) return fallback;
    const auto it = body->find(key);
    return it != body->end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// DL4J's chunks of layer i (config/dl4j_layout.h: its ParamInitializer's order, without a b
// when the layer says hasBias false).
std::vector<Dl4jChunk> dl4j_layer_chunks(const ModelConfig& m, std::size_t i, const nlohmann::json* body) {
    return dl4j_chunks(m, {i}, [&](std::size_t) { return flag(body, "hasBias", true); });
}

std::size_t dl4j_count(const ModelConfig& m, std::size_t i, const nlohmann::json* body) {
    std::size_t n = 0;
    for (const auto& c : dl4j_layer_chunks(m, i, body)) n += c.n;
    return n;
}

// One layer's DL4J parameters at `src` into Thresher's blocks (dl4j_layout.h has the layouts);
// a bias DL4J does not keep stays 0. A batch norm with useLogStd keeps log10 of the standard
// deviation where Thresher keeps the variance.
void map_dl4j_layer(const ModelConfig& m, std::size_t i, const nlohmann::json* body, const float* src, Sink& sink) {
    const auto& l = m.layers[i];
    for (const auto& c : dl4j_layer_chunks(m, i, body)) {
        if (l.type == LayerType::Embedding && c.role == ParamRole::Bias) {
            // Thresher's embedding is the lookup alone: a bias DL4J learned cannot be dropped.
            for (std::size_t k = 0; k < c.n; ++k)
                if (src[k] != 0.f)
                    refuse(sink.source(), m, i, "bias b[" + std::to_string(k) + "] is " + import::number_text(src[k]) +
                                                    ": Thresher's embedding has no bias (only a zero one can be imported)");
            src += c.n;
            continue;
        }
        float* dst = sink.at(i, c.role);
        dl4j_chunk_to_thresher(l, c, src, dst);
        src += c.n;
        if (c.role == ParamRole::RunningVar && flag(body, "useLogStd", false))
            for (std::size_t k = 0; k < c.n; ++k) dst[k] = static_cast<float>(std::pow(10.0, 2.0 * dst[k]));  // s = 10^x, var = s^2
        sink.check(i, is_recurrent(l.type) ? "W, RW and b" : c.role == ParamRole::Weight ? "W" : c.role == ParamRole::Bias ? "b" : c.role == ParamRole::Alpha ? "alpha"
                      : c.role == ParamRole::Depthwise ? "depthwise W" : "batch-norm parameters",
                   dst, c.n);
    }
}

// DL4J's updaterState.bin (config/dl4j_layout.h: UpdaterBlocks over the chunks in DL4J's order,
// each component mapped as the parameters are). Adam's bias correction also needs DL4J's step
// count: import_dl4j_zip reads configuration.json's iterationCount for that. Returns a note, or
// "" when the state was loaded.
std::string map_dl4j_updater_state(const ModelConfig& m, const nlohmann::json& config, const Nd4jArray& st,
                                   std::vector<float>& state) {
    const auto layout = thresher_state_layout(m);
    const std::size_t total = layout.total;
    // DL4J's parameters in its flattened order.
    std::vector<Dl4jChunk> chunks;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const auto& l = m.layers[i];
        if (!has_params(l)) continue;
        const auto* body = dl4j_layer_body(config, l.origin);
        if (body && body->contains("biasUpdater") && !(*body)["biasUpdater"].is_null())
            return "updaterState.bin: not imported (" + l.origin + " has its own biasUpdater, whose state blocks Thresher "
                   "does not keep); the updater starts fresh";
        for (const auto& c : dl4j_layer_chunks(m, i, body)) chunks.push_back(c);
    }
    std::size_t need = 0;
    for (const auto& c : chunks) need += c.n * dl4j_state_per_param(m, c);
    if (st.size() != need)
        return "updaterState.bin: not imported (" + std::to_string(st.size()) + " values, the updaters here keep " +
               std::to_string(need) + "); the updater starts fresh";
    state.assign(total, 0.f);
    const float* src = st.data.data();
    dl4j_walk_updater_state(m, chunks, [&](const Dl4jChunk& c, std::size_t component) {
        // An embedding's bias (zero, weight import checked) has no place in Thresher: nor its state.
        if (!(m.layers[c.layer].type == LayerType::Embedding && c.role == ParamRole::Bias))
            for (std::size_t j = 0; j < c.n; ++j) state[dl4j_state_index(m, layout, c, component, j)] = src[j];
        src += c.n;
    });
    for (float v : state)
        if (!std::isfinite(v)) {
            state.clear();
            return "updaterState.bin: not imported (it holds NaN or infinite values); the updater starts fresh";
        }
    return {};
}

ImportResult import_dl4j_zip(const ZipArchive& zip, const std::string& source, const ImportOptions& options) {
    const auto config_bytes = zip.read("configuration.json");
    const std::string config_text(config_bytes->begin(), config_bytes->end());
    const std::string config_source = source + ": configuration.json";
    auto r = import_model_json(config_text, config_source, options);
    if (r.format != ModelFormat::Dl4j)
        throw ConfigError(config_source + ": not a DL4J MultiLayerConfiguration (no \"confs\")");
    r.model.name = stem(source);
    const auto config = parse_json_text(config_text, config_source);
    const ModelConfig& m = r.model;

    const auto coefficients = zip.read("coefficients.bin");
    if (!coefficients)
        throw ConfigError(source + ": holds configuration.json but no coefficients.bin: not a DL4J model zip with parameters");
    const std::string coef_source = source + ": coefficients.bin";
    std::size_t used = 0;
    const auto a = read_nd4j_array(*coefficients, coef_source, &used);
    std::size_t non_unit = 0;
    for (auto d : a.shape) non_unit += d != 1;
    if (non_unit > 1)
        throw ConfigError(coef_source + ": holds an array of shape " + a.shape_str() +
                          ", expected DL4J's flattened parameters (a row vector)");

    std::size_t need = 0;
    std::ostringstream per_layer;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        if (!has_params(m.layers[i])) continue;
        const auto n = dl4j_count(m, i, dl4j_layer_body(config, m.layers[i].origin));
        per_layer << (need ? ", " : "") << m.layers[i].origin << " " << m.layers[i].origin_what << " " << n;
        need += n;
    }
    if (a.size() != need)
        throw ConfigError(coef_source + ": holds " + std::to_string(a.size()) + " parameters, but configuration.json needs " +
                          std::to_string(need) + " (" + per_layer.str() + ")");

    r.params.assign(m.param_count(), 0.f);
    Sink sink(config_source, m, r.params);
    std::size_t at = 0;
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        if (!has_params(m.layers[i])) continue;
        check_known_blocks(config_source, m, i);
        const auto* body = dl4j_layer_body(config, m.layers[i].origin);
        map_dl4j_layer(m, i, body, a.data.data() + at, sink);
        at += dl4j_count(m, i, body);
    }
    r.notes.push_back("weights: " + std::to_string(a.size()) + " parameters from coefficients.bin (" + a.data_type +
                      ", order '" + std::string(1, a.order) + "'), mapped layer by layer");
    if (const auto updater = zip.read("updaterState.bin")) {
        std::string note;
        try {
            const auto st = read_nd4j_array(*updater, source + ": updaterState.bin");
            note = map_dl4j_updater_state(m, config, st, r.updater_state);
            if (note.empty()) {
                // The step count the state belongs to (Adam's bias correction, schedules by
                // iteration): MultiLayerConfiguration's iterationCount, or 0.x's per conf.
                const nlohmann::json* count = nullptr;
                if (config.contains("iterationCount")) count = &config["iterationCount"];
                else if (config.contains("confs") && config["confs"].is_array() && !config["confs"].empty() &&
                         config["confs"][0].is_object() && config["confs"][0].contains("iterationCount"))
                    count = &config["confs"][0]["iterationCount"];
                if (count && count->is_number_integer() && count->get<long long>() >= 0 && count->get<long long>() < (1LL << 40))
                    r.iterations = static_cast<long>(count->get<long long>());
                else if (count)
                    throw ConfigError(config_source + ": \"iterationCount\": expected a count of iterations, got " + count->dump());
                note = "updaterState.bin: " + std::to_string(st.size()) + " values of DL4J's updater state imported "
                       "(fine-tuning continues with its momentum / running averages from DL4J's iteration " +
                       std::to_string(r.iterations) + ")";
            }
        } catch (const ConfigError& e) {
            r.updater_state.clear();
            note = std::string("updaterState.bin: not imported (") + e.what() + "); the updater starts fresh";
        }
        r.notes.push_back(note);
    }
    if (const auto normalizer = zip.read("normalizer.bin")) {
        r.normalization = read_dl4j_normalizer(*normalizer, source + ": normalizer.bin", m);
        r.notes.push_back("normalizer.bin: " + r.normalization.description +
                          " imported: train, evaluate and predict normalise the features with it, as DL4J did");
    }
    for (const auto& name : zip.names())
        if (name != "configuration.json" && name != "coefficients.bin" && name != "updaterState.bin" &&
            name != "normalizer.bin" && name.find('/') == std::string::npos)
            r.notes.push_back(name + ": ignored");
    return r;
}

// ---------------------------------------------------------------- Keras

enum class Role { Kernel, Bias, Gamma, Beta, Mean, Var, Alpha, Depthwise, Pointwise, Unknown };

Role role_of(std::string name) {
    if (auto slash = name.rfind('/'); slash != std::string::npos) name = name.substr(slash + 1);
    if (auto colon = name.rfind(':'); colon != std::string::npos) name = name.substr(0, colon);
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto ends = [&](const std::string& s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
    if (ends("depthwise_kernel")) return Role::Depthwise;
    if (ends("pointwise_kernel")) return Role::Pointwise;
    if (ends("kernel") || ends("_w") || name == "w") return Role::Kernel;
    if (ends("bias") || ends("_b") || name == "b") return Role::Bias;
    if (ends("gamma")) return Role::Gamma;
    if (ends("alpha")) return Role::Alpha;
    if (ends("beta")) return Role::Beta;
    if (ends("moving_mean") || ends("running_mean")) return Role::Mean;
    if (ends("moving_variance") || ends("running_std") || ends("running_var")) return Role::Var;
    return Role::Unknown;
}

using Weight = KerasWeight;  // name as the file gives it, and the array

// The Keras layer (or nested model) object named `name` anywhere in the model JSON
// (config.layers[...], Keras 1's list, a nested model's layers): {"class_name", "config"}.
const nlohmann::json* keras_layer_object(const nlohmann::json& j, const std::string& name, int depth = 0) {
    if (depth > 16) return nullptr;
    if (j.is_object()) {
        const auto c = j.find("config");
        if (j.contains("class_name") && c != j.end() && c->is_object()) {
            const auto n = c->find("name");
            if (n != c->end() && n->is_string() && *n == name) return &j;
        }
        for (const auto& [k, v] : j.items())
            if (v.is_object() || v.is_array())
                if (const auto* found = keras_layer_object(v, name, depth + 1)) return found;
    } else if (j.is_array()) {
        for (const auto& v : j)
            if (const auto* found = keras_layer_object(v, name, depth + 1)) return found;
    }
    return nullptr;
}

// Its "config", or null.
const nlohmann::json* keras_layer(const nlohmann::json& j, const std::string& name) {
    const auto* o = keras_layer_object(j, name);
    return o ? &(*o)["config"] : nullptr;
}

// Its class_name, or "".
std::string keras_class_of(const nlohmann::json& j, const std::string& name) {
    const auto* o = keras_layer_object(j, name);
    return o && (*o)["class_name"].is_string() ? (*o)["class_name"].get<std::string>() : std::string();
}

bool channels_first(const nlohmann::json& j, int depth = 0) {
    if (depth > 8) return false;
    if (j.is_object()) {
        for (const auto& [k, v] : j.items()) {
            if ((k == "data_format" && v == "channels_first") || (k == "dim_ordering" && v == "th")) return true;
            if ((v.is_object() || v.is_array()) && channels_first(v, depth + 1)) return true;
        }
    } else if (j.is_array()) {
        for (const auto& v : j)
            if (channels_first(v, depth + 1)) return true;
    }
    return false;
}

class KerasMapper {
public:
    KerasMapper(const std::string& source, ImportResult& r, const nlohmann::json& model_json)
        : source_(source), r_(r), json_(model_json), first_(channels_first(model_json)) {
        r_.params.assign(r_.model.param_count(), 0.f);
    }

    void map(std::size_t i, std::vector<Weight> w) {
        const auto& m = r_.model;
        if (is_keras_sequence_weight_layer(m.layers[i].type)) {  // recurrent, embedding, conv1d: keras_recurrent.h
            map_keras_sequence_weights(source_, m, i, w, r_.params);
            count_ += m.layers[i].param_count;
            return;
        }
        check_known_blocks(source_, m, i);
        const auto& l = m.layers[i];
        const auto* cfg = keras_layer(json_, l.name);
        // A layer of a nested model ("encoder/conv"): its config sits in the nested model's.
        if (!cfg && l.name.find('/') != std::string::npos) cfg = keras_layer(json_, l.name.substr(l.name.rfind('/') + 1));
        auto cfg_flag = [&](const char* key) {
            if (!cfg) return true;
            const auto it = cfg->find(key);
            return it == cfg->end() || !it->is_boolean() || it->get<bool>();
        };
        std::vector<Role> want;
        if (l.type == LayerType::BatchNorm) {
            if (cfg_flag("scale")) want.push_back(Role::Gamma);
            if (cfg_flag("center")) want.push_back(Role::Beta);
            want.push_back(Role::Mean);
            want.push_back(Role::Var);
        } else if (l.type == LayerType::PRelu) {
            want.push_back(Role::Alpha);
        } else if (l.type == LayerType::DepthwiseConvolution || l.type == LayerType::SeparableConvolution) {
            // Keras's order (.keras vars/0, 1, ...): depthwise kernel, [pointwise kernel], bias.
            want.push_back(Role::Depthwise);
            if (l.type == LayerType::SeparableConvolution) want.push_back(Role::Pointwise);
            if (cfg_flag("use_bias") && cfg_flag("bias")) want.push_back(Role::Bias);
        } else {
            want.push_back(Role::Kernel);
            if (cfg_flag("use_bias") && cfg_flag("bias")) want.push_back(Role::Bias);
        }
        std::string names;
        for (const auto& x : w) names += (names.empty() ? "" : ", ") + x.name + " " + x.value.dims_str();
        if (w.size() != want.size())
            refuse(source_, m, i, "the file holds " + std::to_string(w.size()) + " weight(s) for it (" + names +
                                      "), the layer needs " + std::to_string(want.size()));
        // By name where the file names them (h5), else in Keras's order (.keras: vars/0, 1, ...).
        bool named = true;
        for (const auto& x : w) named = named && role_of(x.name) != Role::Unknown;
        std::map<Role, const Weight*> by_role;
        for (std::size_t k = 0; k < w.size(); ++k) by_role[named ? role_of(w[k].name) : want[k]] = &w[k];
        for (auto role : want)
            if (!by_role.count(role)) refuse(source_, m, i, "the file's weights (" + names + ") do not name the ones the layer needs");

        Sink sink(source_, m, r_.params);
        const auto units = static_cast<std::size_t>(l.units);
        auto expect = [&](const Weight& x, std::initializer_list<std::uint64_t> shape) {
            const std::vector<std::uint64_t> s(shape);
            if (x.value.dims != s)
                refuse(source_, m, i, x.name + " has shape " + x.value.dims_str() + ", the layer needs " + dims(shape));
            sink.check(i, x.name.c_str(), x.value.data.data(), x.value.data.size());
        };
        auto vector_into = [&](Role role, ParamRole to, std::size_t n, float fallback) {
            float* dst = sink.at(i, to);
            if (const auto it = by_role.find(role); it != by_role.end()) {
                expect(*it->second, {n});
                std::copy_n(it->second->value.data.data(), n, dst);
            } else {
                std::fill_n(dst, n, fallback);
            }
        };
        switch (l.type) {
            case LayerType::Dense:
            case LayerType::Output: {
                const auto& s = l.in_shape;
                const Weight& k = *by_role[Role::Kernel];
                // On a sequence the same kernel runs at every step (TimeDistributed(Dense)).
                const std::size_t rows = s.sequence() ? static_cast<std::size_t>(s.c) : s.size();
                expect(k, {rows, units});
                float* dst = sink.at(i, ParamRole::Weight);
                const float* src = k.value.data.data();
                if (!s.flat() && !s.sequence() && !first_) {
                    // After Flatten, Keras row (h*W + w)*C + c is Thresher's row (c*H + h)*W + w.
                    for (int c = 0; c < s.c; ++c)
                        for (int y = 0; y < s.h; ++y)
                            for (int x = 0; x < s.w; ++x) {
                                const std::size_t ours = (static_cast<std::size_t>(c) * s.h + y) * s.w + x;
                                const std::size_t theirs = (static_cast<std::size_t>(y) * s.w + x) * s.c + c;
                                std::copy_n(src + theirs * units, units, dst + ours * units);
                            }
                    flatten_permuted_ = true;
                } else {
                    std::copy_n(src, rows * units, dst);
                }
                vector_into(Role::Bias, ParamRole::Bias, units, 0.f);
                break;
            }
            case LayerType::Convolution: {
                const auto kh = static_cast<std::size_t>(l.kernel[0]), kw = static_cast<std::size_t>(l.kernel[1]);
                const auto in = static_cast<std::size_t>(l.in_shape.c);
                const Weight& k = *by_role[Role::Kernel];
                if (k.value.dims == std::vector<std::uint64_t>{units, in, kh, kw} && !(units == kh && in == kw))
                    refuse(source_, m, i, k.name + " has shape " + k.value.dims_str() +
                                              " (Keras 1 / Theano kernel order): only [kh, kw, in, out] kernels are imported");
                expect(k, {kh, kw, in, units});
                float* dst = sink.at(i, ParamRole::Weight);
                const float* src = k.value.data.data();
                // Keras [kh, kw, in, out] -> Thresher [out, in, kh, kw].
                for (std::size_t o = 0; o < units; ++o)
                    for (std::size_t c = 0; c < in; ++c)
                        for (std::size_t y = 0; y < kh; ++y)
                            for (std::size_t x = 0; x < kw; ++x)
                                dst[((o * in + c) * kh + y) * kw + x] = src[((y * kw + x) * in + c) * units + o];
                vector_into(Role::Bias, ParamRole::Bias, units, 0.f);
                break;
            }
            case LayerType::TransposedConvolution: {
                const auto kh = static_cast<std::size_t>(l.kernel[0]), kw = static_cast<std::size_t>(l.kernel[1]);
                const auto in = static_cast<std::size_t>(l.in_shape.c);
                const Weight& k = *by_role[Role::Kernel];
                expect(k, {kh, kw, units, in});
                float* dst = sink.at(i, ParamRole::Weight);
                const float* src = k.value.data.data();
                // Keras [kh, kw, out, in] -> Thresher [in, out, kh, kw] (the kernel is not flipped:
                // both are the adjoint of the same cross-correlation).
                for (std::size_t c = 0; c < in; ++c)
                    for (std::size_t o = 0; o < units; ++o)
                        for (std::size_t y = 0; y < kh; ++y)
                            for (std::size_t x = 0; x < kw; ++x)
                                dst[((c * units + o) * kh + y) * kw + x] = src[((y * kw + x) * units + o) * in + c];
                vector_into(Role::Bias, ParamRole::Bias, units, 0.f);
                break;
            }
            case LayerType::DepthwiseConvolution:
            case LayerType::SeparableConvolution: {
                const auto kh = static_cast<std::size_t>(l.kernel[0]), kw = static_cast<std::size_t>(l.kernel[1]);
                const auto in = static_cast<std::size_t>(l.in_shape.c), mult = static_cast<std::size_t>(l.depth_multiplier);
                const Weight& d = *by_role[Role::Depthwise];
                expect(d, {kh, kw, in, mult});
                const bool separable = l.type == LayerType::SeparableConvolution;
                float* dst = sink.at(i, separable ? ParamRole::Depthwise : ParamRole::Weight);
                const float* src = d.value.data.data();
                // Keras [kh, kw, in, multiplier] -> Thresher [in * multiplier, 1, kh, kw]: input
                // channel c's m-th kernel makes output channel c * multiplier + m, in both.
                for (std::size_t c = 0; c < in; ++c)
                    for (std::size_t mm = 0; mm < mult; ++mm)
                        for (std::size_t y = 0; y < kh; ++y)
                            for (std::size_t x = 0; x < kw; ++x)
                                dst[((c * mult + mm) * kh + y) * kw + x] = src[((y * kw + x) * in + c) * mult + mm];
                if (separable) {
                    const std::size_t mid = in * mult;
                    const Weight& p = *by_role[Role::Pointwise];
                    expect(p, {1, 1, mid, units});
                    float* pw = sink.at(i, ParamRole::Weight);
                    // Keras [1, 1, mid, filters] -> Thresher [filters, mid].
                    for (std::size_t f = 0; f < units; ++f)
                        for (std::size_t j = 0; j < mid; ++j) pw[f * mid + j] = p.value.data[j * units + f];
                }
                vector_into(Role::Bias, ParamRole::Bias, units, 0.f);
                break;
            }
            case LayerType::BatchNorm: {
                const auto c = static_cast<std::size_t>(l.in_shape.c);
                vector_into(Role::Gamma, ParamRole::Gamma, c, 1.f);
                vector_into(Role::Beta, ParamRole::Beta, c, 0.f);
                vector_into(Role::Mean, ParamRole::RunningMean, c, 0.f);
                vector_into(Role::Var, ParamRole::RunningVar, c, 1.f);
                break;
            }
            case LayerType::PRelu: {
                // Keras: alpha has the input's shape without the batch, channels last, shared axes 1.
                const auto& s = l.in_shape;
                const auto ac = static_cast<std::size_t>(l.prelu_shared[0] ? 1 : s.c);
                const auto ah = static_cast<std::size_t>(l.prelu_shared[1] ? 1 : s.h);
                const auto aw = static_cast<std::size_t>(l.prelu_shared[2] ? 1 : s.w);
                const Weight& a = *by_role[Role::Alpha];
                float* dst = sink.at(i, ParamRole::Alpha);
                if (s.flat()) {
                    expect(a, {ac});
                    std::copy_n(a.value.data.data(), ac, dst);
                } else {
                    if (first_) refuse(source_, m, i, "PReLU weights of a channels_first model are not supported");
                    expect(a, {ah, aw, ac});
                    for (std::size_t c = 0; c < ac; ++c)
                        for (std::size_t y = 0; y < ah; ++y)
                            for (std::size_t x = 0; x < aw; ++x)
                                dst[(c * ah + y) * aw + x] = a.value.data[(y * aw + x) * ac + c];
                }
                break;
            }
            default: break;
        }
        count_ += m.layers[i].param_count;
    }

    void finish(const std::string& from) {
        r_.notes.push_back("weights: " + std::to_string(count_) + " parameters from " + from +
                           ", mapped layer by layer (Keras kernel layouts converted)");
        if (flatten_permuted_) {
            // The architecture importer's note says the order does not matter because no weights
            // come with a bare config; here they do, and they were reordered.
            std::erase_if(r_.notes, [](const std::string& n) { return n.find("(no weights are imported)") != std::string::npos; });
            r_.notes.push_back("weights: the Dense after Flatten had its rows reordered from Keras's height x width x "
                               "channels to Thresher's channels x height x width");
        }
    }

private:
    const std::string& source_;
    ImportResult& r_;
    const nlohmann::json& json_;
    bool first_;
    bool flatten_permuted_ = false;
    std::size_t count_ = 0;
};


// Keras splits an attribute too large for an HDF5 object header into name0, name1, ...
// (save_attributes_to_hdf5_group); this reads either form.
std::optional<std::vector<std::string>> keras_list(const Hdf5File& f, const std::string& path, const std::string& name) {
    if (auto whole = f.strings(path, name)) return whole;
    std::optional<std::vector<std::string>> out;
    for (int chunk = 0;; ++chunk) {
        const auto part = f.strings(path, name + std::to_string(chunk));
        if (!part) break;
        if (!out) out.emplace();
        out->insert(out->end(), part->begin(), part->end());
    }
    return out;
}

ImportResult import_keras_h5(std::span<const std::uint8_t> bytes, const std::string& source, const ImportOptions& options) {
    const Hdf5File f(bytes, source);
    const auto model_config = f.string("", "model_config");
    if (!model_config)
        throw ConfigError(source + ": holds no model_config attribute: an HDF5 file from model.save_weights() has weights "
                                   "but no architecture (save with model.save(\"m.h5\"))");
    // Import the architecture as the JSON importers read it, with the compile settings beside it.
    const std::string at = source + ": model_config";
    auto config = parse_json_text(*model_config, at);
    nlohmann::json wrapped{{"model_config", config}};
    if (const auto training = f.string("", "training_config")) wrapped["training_config"] = parse_json_text(*training, source + ": training_config");
    auto r = import_model_json(wrapped.dump(), source, options);
    if (r.format != ModelFormat::Keras) throw ConfigError(at + ": not a Keras model configuration");

    const std::string root = f.exists("model_weights") ? "model_weights" : "";
    const auto layer_names = keras_list(f, root, "layer_names");
    if (!layer_names)
        throw ConfigError(source + ": " + (root.empty() ? std::string("/") : root) +
                          ": has no layer_names attribute: the file holds no Keras weights");
    KerasMapper mapper(source, r, config);
    const auto& m = r.model;
    std::set<std::string> mapped;  // group/weight name of every weight read
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        if (!has_params(m.layers[i])) continue;  // a later call of a shared layer has its first call's weights
        // A layer of a nested model, "encoder/conv", has its weights in the nested model's group
        // (model_weights/encoder), named <...>/conv/<var>: Keras saves a model used as a layer as
        // one layer holding all its weights.
        const std::string& name = m.layers[i].name;
        const auto slash = name.find('/');
        const std::string top = name.substr(0, slash);
        const std::string leaf = name.substr(name.rfind('/') + 1);
        if (std::find(layer_names->begin(), layer_names->end(), top) == layer_names->end())
            refuse(source, m, i, "has no weights in the file (" + (root.empty() ? std::string("/") : root) +
                                     " layer_names does not list \"" + top + "\")");
        const std::string group = (root.empty() ? "" : root + "/") + top;
        const auto weight_names = keras_list(f, group, "weight_names");
        if (!weight_names) refuse(source, m, i, group + " has no weight_names attribute");
        std::vector<Weight> w;
        for (const auto& wn : *weight_names) {
            if (slash != std::string::npos) {
                const auto parent = wn.substr(0, wn.rfind('/') == std::string::npos ? 0 : wn.rfind('/'));
                if (parent.substr(parent.rfind('/') == std::string::npos ? 0 : parent.rfind('/') + 1) != leaf) continue;
            }
            w.push_back({wn, f.floats(group + "/" + wn)});
            mapped.insert(group + "/" + wn);
        }
        mapper.map(i, std::move(w));
    }
    // A Keras layer whose weights found no place (one Thresher folds or drops) is refused: its
    // weights would be lost without a word.
    for (const auto& name : *layer_names) {
        const std::string group = (root.empty() ? "" : root + "/") + name;
        const auto names = keras_list(f, group, "weight_names");
        if (!names) continue;
        for (const auto& wn : *names)
            if (!mapped.count(group + "/" + wn))
                throw ConfigError(source + ": " + group + ": the layer \"" + name + "\" has weight " + wn +
                                  " that Thresher's model has no place for");
    }
    mapper.finish(root.empty() ? "the file's layer groups" : "model_weights");
    return r;
}

// Keras 3 names a Sequential's layers in model.weights.h5 by class, snake_case, numbered per
// class in order ("dense", "dense_1", "conv2d", "batch_normalization"): saving_lib's container state.
std::string snake_case(const std::string& cls) {
    std::string out;
    for (std::size_t k = 0; k < cls.size(); ++k) {
        const char c = cls[k];
        const bool upper = std::isupper(static_cast<unsigned char>(c));
        if (upper && k > 0) {
            const char prev = cls[k - 1];
            const bool next_lower = k + 1 < cls.size() && std::islower(static_cast<unsigned char>(cls[k + 1]));
            if (std::islower(static_cast<unsigned char>(prev)) || (next_lower && prev != '_')) out.push_back('_');
        }
        out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return out;
}

ImportResult import_keras_archive(const ZipArchive& zip, const std::string& source, const ImportOptions& options) {
    const auto config_bytes = zip.read("config.json");
    const std::string config_text(config_bytes->begin(), config_bytes->end());
    const std::string config_source = source + ": config.json";
    auto r = import_model_json(config_text, config_source, options);
    if (r.format != ModelFormat::Keras) throw ConfigError(config_source + ": not a Keras model configuration");
    r.model.name = stem(source);
    const auto config = parse_json_text(config_text, config_source);
    const auto weights = zip.read("model.weights.h5");
    if (!weights) throw ConfigError(source + ": holds config.json but no model.weights.h5: no weights to import");
    const Hdf5File f(*weights, source + ": model.weights.h5");
    KerasMapper mapper(f.source(), r, config);
    const auto& m = r.model;
    std::map<std::string, std::map<std::string, int>> seen;  // per container and class, for Keras 3's numbering
    std::map<std::string, std::string> nested_numbered;       // a nested model's name -> its numbered key
    std::set<std::string> used;                               // the vars groups mapped
    auto number = [&](const std::string& container, const std::string& cls) {
        const std::string base = snake_case(cls);
        const int n = seen[container][base]++;
        return n ? base + "_" + std::to_string(n) : base;
    };
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const auto& l = m.layers[i];
        if (!has_params(l)) continue;  // a later call of a shared layer has its first call's weights
        const std::string cls = l.origin_what.substr(0, l.origin_what.find(' '));
        // A layer of a nested model ("encoder/conv"): saving_lib keeps the nested model's layers
        // in its own container, layers/<model>/layers/<layer>/vars, numbered per class there.
        const auto slash = l.name.find('/');
        std::vector<std::string> containers{"layers/", "_layer_checkpoint_dependencies/"};
        std::string numbered, by_name = l.name;
        if (slash != std::string::npos) {
            const std::string top = l.name.substr(0, slash), leaf = l.name.substr(l.name.rfind('/') + 1);
            if (!nested_numbered.count(top)) nested_numbered[top] = number("", keras_class_of(config, top));
            numbered = "layers/" + nested_numbered[top] + "/layers/" + number(top, cls);
            by_name = "layers/" + top + "/layers/" + leaf;
            containers = {""};
        } else {
            numbered = number("", cls);
        }
        std::string vars;
        for (const auto& prefix : containers)
            for (const auto& key : {numbered, by_name})
                if (vars.empty() && f.exists(prefix + key + "/vars")) vars = prefix + key + "/vars";
        if (vars.empty())
            refuse(f.source(), m, i, "has no weights in the file (looked for " + containers[0] + numbered + "/vars and " + containers[0] + by_name + "/vars)");
        used.insert(vars);
        std::vector<Weight> w;
        // A recurrent layer's variables sit in its cell, a TimeDistributed's in its inner layer.
        for (const auto& group : keras3_variable_groups(f, vars.substr(0, vars.size() - 5), l)) {
            if (!f.exists(group)) refuse(f.source(), m, i, "has no weights in the file (looked for " + group + ")");
            auto members = f.members(group);
            // vars/0, vars/1, ...: numeric order, not name order (vars/10 after vars/9).
            std::sort(members.begin(), members.end(), [](const std::string& a, const std::string& b) {
                return a.size() != b.size() ? a.size() < b.size() : a < b;
            });
            for (const auto& name : members) w.push_back({group + "/" + name, f.floats(group + "/" + name)});
        }
        mapper.map(i, std::move(w));
    }
    // A Keras layer whose weights found no place (one Thresher folds or drops) is refused.
    for (const char* prefix : {"layers", "_layer_checkpoint_dependencies"}) {
        if (!f.exists(prefix)) continue;
        for (const auto& key : f.members(prefix)) {
            const std::string vars = std::string(prefix) + "/" + key + "/vars";
            if (f.exists(vars) && !f.members(vars).empty() && !used.count(vars))
                throw ConfigError(f.source() + ": " + vars + ": " + std::to_string(f.members(vars).size()) +
                                  " weight(s) that Thresher's model has no place for");
        }
    }
    mapper.finish("model.weights.h5");
    for (const auto& name : zip.names())
        if (name != "config.json" && name != "model.weights.h5" && name != "metadata.json" && name.find('/') == std::string::npos)
            r.notes.push_back(name + ": ignored");
    return r;
}

}  // namespace

bool holds_weights_format(std::span<const std::uint8_t> bytes) { return looks_like_zip(bytes) || looks_like_hdf5(bytes); }

ImportResult import_model_with_weights(std::span<const std::uint8_t> bytes, const std::string& source,
                                       const ImportOptions& options) {
    if (looks_like_hdf5(bytes)) return import_keras_h5(bytes, source, options);
    const ZipArchive zip(bytes, source);
    if (zip.contains("configuration.json")) return import_dl4j_zip(zip, source, options);
    if (zip.contains("config.json")) return import_keras_archive(zip, source, options);
    std::string names;
    const auto all = zip.names();
    for (std::size_t k = 0; k < all.size() && k < 8; ++k) names += (k ? ", " : "") + all[k];
    throw ConfigError(source + ": a zip archive with neither configuration.json (a DL4J model zip) nor config.json "
                               "(a Keras .keras archive); it holds: " + (names.empty() ? std::string("nothing") : names));
}

}  // namespace thresher::config
