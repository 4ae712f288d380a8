// DL4J's recurrent and embedding layers (dl4j_recurrent.h). Their parameters' layout is in
// dl4j_layout.cpp; the conf-level settings every layer shares (updater, init, regularisation)
// are read by dl4j_import.cpp as for any layer with parameters.
#include "config/dl4j_recurrent.h"

#include "config/json_fields.h"
#include "config/model_format.h"

namespace thresher::config {

using import::Place;
using import::Typed;

std::optional<Typed> dl4j_unwrap_sequence_layer(const Place& p, Typed t, Dl4jWrapping& w) {
    std::string opened, closed;  // "Bidirectional(" ... ")" for messages
    for (int depth = 0; depth < 4; ++depth) {
        const std::string wrapper = t.name;
        const nlohmann::json* wrapper_body = t.body;
        if (wrapper == "LastTimeStep") {
            if (!t.body->contains("underlying") || !(*t.body)["underlying"].is_object())
                p.fail("layer", "LastTimeStep without the layer it wraps (\"underlying\")");
            const auto inner = import::typed((*t.body)["underlying"]);
            if (!inner) p.fail("layer", "LastTimeStep's \"underlying\" is not a layer object");
            w.last_time_step = true;
            w.last_step_inside = !w.bidirectional_mode.empty();
            t = *inner;
        } else if (wrapper == "Bidirectional") {
            const auto& b = *t.body;
            if (!b.contains("fwd") || !b.contains("bwd") || !b["fwd"].is_object() || !b["bwd"].is_object())
                p.fail("layer", "Bidirectional without its \"fwd\" and \"bwd\" layers");
            const auto fwd = import::typed(b["fwd"]), bwd = import::typed(b["bwd"]);
            if (!fwd || !bwd) p.fail("layer", "Bidirectional's \"fwd\" or \"bwd\" is not a layer object");
            // DL4J clones one layer for both directions; two different ones Thresher cannot hold.
            if (fwd->name != bwd->name)
                p.fail("layer", "Bidirectional with a " + fwd->name + " forward and a " + bwd->name + " backward layer is not supported");
            w.bidirectional_mode = b.contains("mode") && b["mode"].is_string() ? b["mode"].get<std::string>() : "CONCAT";
            t = *fwd;
        }
        if (wrapper == "LastTimeStep" || wrapper == "Bidirectional") {
            // The wrapped layer's settings are read; a dropout only the wrapper holds would be lost.
            for (const char* key : {"idropout", "dropOut"}) {
                const auto* mine = t.body->contains(key) ? &(*t.body)[key] : nullptr;
                const auto it = wrapper_body->find(key);
                if (it != wrapper_body->end() && !it->is_null() && !(mine && *mine == *it))
                    p.fail("layer", wrapper + "'s own \"" + key + "\" differs from its layer's (Thresher reads the wrapped layer's)");
            }
        } else {
            if (!opened.empty()) w.label = opened + t.name + closed;
            return t;
        }
        opened += wrapper + "(";
        closed += ")";
    }
    p.fail("layer", "wrappers nested too deeply");
}

namespace {

BiMode bidirectional_mode(Place& p, const std::string& mode) {
    const auto n = normalise_name(mode);
    if (n == "concat") return BiMode::Concat;
    if (n == "add") return BiMode::Sum;
    if (n == "mul") return BiMode::Mul;
    if (n == "average") return BiMode::Average;
    p.fail("mode", "Bidirectional mode \"" + mode + "\" is not supported (CONCAT, ADD, MUL or AVERAGE)");
}

// Any element-wise activation runs in a recurrent cell (oneDNN's primitives for sigmoid gates
// with a tanh cell, the host path otherwise); softmax mixes a step's units and has no cell form.
ActivationSpec elementwise(Place& p, const char* key, const ActivationSpec& a) {
    if (a.kind == Activation::Softmax) p.fail(key, "softmax is not supported in a recurrent cell (an element-wise activation is)");
    return a;
}

}  // namespace

int read_dl4j_sequence_layer(Place& p, const std::string& cls, const Dl4jWrapping& w, LayerConfig& l,
                             const std::function<ActivationSpec(const char* key)>& activation) {
    const auto n_out = p.integer({"nout", "nOut"}, 1);
    if (!n_out) p.fail("nOut", "is required: a positive number of outputs");
    if (*n_out > (1 << 16)) p.fail("nOut", "at most 65536");
    l.units = *n_out;
    if (cls == "EmbeddingLayer" || cls == "EmbeddingSequenceLayer" || cls == "embedding") {
        if (!w.bidirectional_mode.empty() || w.last_time_step) p.fail("layer", cls + " cannot be wrapped in Bidirectional or LastTimeStep");
        const auto n_in = p.integer({"nin", "nIn"}, 1);
        if (!n_in) p.fail("nIn", "is required: the vocabulary (ids 0 to nIn - 1)");
        if (*n_in > (1 << 24)) p.fail("nIn", "a vocabulary beyond 2^24 ids is not supported");
        l.type = LayerType::Embedding;
        l.vocabulary = *n_in;
        // DL4J applies the layer's activation to the looked-up vectors; Thresher's embedding is
        // the lookup alone.
        if (const auto a = activation("activationFn"); a.kind != Activation::Identity)
            p.fail("activationFn", std::string(to_string(a.kind)) + " is not supported on an embedding (Thresher's has none: identity)");
        if (p.boolean({"hasBias"}).value_or(cls != "EmbeddingSequenceLayer"))
            p.note("hasBias: Thresher's embedding has no bias (imported weights must hold a zero bias)");
        p.ignore({"outputFormat", "weightInitFn", "weightInit"});
        // inferInputLength true: DL4J takes the steps from the data and "inputLength" means nothing.
        const bool inferred = p.boolean({"inferInputLength"}).value_or(false);
        const int steps = p.integer({"inputLength"}, 1).value_or(0);
        if (steps > kMaxImportSteps) p.fail("inputLength", "beyond 2^20 steps");
        return cls == "EmbeddingSequenceLayer" && !inferred ? steps : 0;
    }
    // Gate and cell activations: DL4J's defaults are sigmoid gates and the layer's activationFn
    // on the cell (tanh in every DL4J example).
    const auto act = activation("activationFn");
    if (cls == "SimpleRnn") {
        l.type = LayerType::SimpleRnn;
        l.activation = elementwise(p, "activationFn", act);
    } else {
        l.type = LayerType::Lstm;
        l.cell_activation = elementwise(p, "activationFn", act);
        l.gate_activation = elementwise(p, "gateActivationFn", activation("gateActivationFn"));
        l.peepholes = cls != "LSTM";  // GravesLSTM and GravesBidirectionalLSTM have peepholes
        const auto fb = p.hyper({"forgetGateBiasInit"}, import::Range{-100.0, 100.0});
        l.forget_bias = static_cast<float>(fb.value_or(1.0));
        if (cls == "GravesBidirectionalLSTM" || cls == "gravesBidirectionalLSTM") {
            if (!w.bidirectional_mode.empty()) p.fail("layer", "a GravesBidirectionalLSTM inside Bidirectional is not supported");
            l.bidirectional = BiMode::Sum;  // GravesBidirectionalLSTM adds its two directions' outputs
        }
    }
    if (!w.bidirectional_mode.empty()) l.bidirectional = bidirectional_mode(p, w.bidirectional_mode);
    // DL4J's last step of a bidirectional output (LastTimeStep outside) pairs the forward state
    // after the whole sequence with the backward one after reading only that last step; Thresher's
    // (Keras's, and DL4J's Bidirectional(LastTimeStep(...))) backward "last" output has read the
    // whole sequence. Not the same numbers: refused.
    if (w.last_time_step && l.bidirectional != BiMode::None && !w.last_step_inside)
        p.fail("layer", "LastTimeStep of a bidirectional layer is not supported (DL4J's backward direction has read only the "
                        "last step there, Thresher's the whole sequence: Bidirectional(LastTimeStep(...)) is Thresher's)");
    l.return_sequences = !w.last_time_step;
    if (p.has("weightInitFnRecurrent") || p.has("weightInitRecurrent"))
        p.note("weightInitRecurrent ignored: the recurrent weights start like the input weights");
    p.ignore({"gateActivationFn", "helperAllowFallback", "rnnDataFormat", "distRecurrent", "weightInitFnRecurrent",
              "weightInitRecurrent", "forgetGateBiasInit", "dataFormat"});
    return 0;
}

}  // namespace thresher::config

namespace thresher::config {

std::size_t dl4j_recurrent_index(const LayerConfig& l, std::size_t j) {
    const bool lstm = l.type == LayerType::Lstm;
    const std::size_t in = static_cast<std::size_t>(l.in_shape.c), h = static_cast<std::size_t>(l.units);
    const std::size_t g = lstm ? 4 : 1, gh = g * h;
    const std::size_t peep = lstm && l.peepholes ? 3 : 0;
    static constexpr std::size_t kGate[4] = {2, 1, 3, 0};  // DL4J block -> Thresher gate
    static constexpr std::size_t kPeephole[3] = {1, 2, 0};  // DL4J peephole column -> Thresher P row
    auto gate_column = [&](std::size_t col) { return lstm ? kGate[col / h] * h + col % h : col; };
    const std::size_t per_direction = in * gh + h * (gh + peep) + gh;
    const std::size_t base = (j / per_direction) * per_direction;
    std::size_t k = j % per_direction;
    if (k < in * gh) return base + (k % in) * gh + gate_column(k / in);  // W
    k -= in * gh;
    const std::size_t ours_r = base + in * gh;
    if (k < h * (gh + peep)) {  // RW
        const std::size_t row = k % h, col = k / h;
        if (col < gh) return ours_r + row * gh + gate_column(col);
        return ours_r + h * gh + gh + kPeephole[col - gh] * h + row;  // after R and b: P [3 x H]
    }
    k -= h * (gh + peep);
    return ours_r + h * gh + gate_column(k);  // b
}

}  // namespace thresher::config
