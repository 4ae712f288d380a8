#include "config/schedule_import.h"

#include <algorithm>
#include <cmath>

#include "config/json_fields.h"

namespace thresher::config::import {

namespace {

constexpr Range kAny{-1e12, 1e12, false, false};
constexpr Range kSteps{0.0, 1e12, true, false};

double need(Place& s, const char* key, const Range& range) {
    auto v = s.hyper({key}, range);
    if (!v) s.fail(key, "is required");
    return *v;
}

ScheduleUnit dl4j_unit(Place& s) {
    const auto t = s.string({"scheduleType"}).value_or("ITERATION");
    const auto n = normalise_name(t);
    if (n == "iteration") return ScheduleUnit::Iteration;
    if (n == "epoch") return ScheduleUnit::Epoch;
    s.fail("scheduleType", "must be ITERATION or EPOCH, got \"" + t + "\"");
}

// "values": {"0": 0.1, "1000": 0.01} (DL4J MapSchedule and 0.x learningRateSchedule).
void read_map(Place& s, const char* key, const nlohmann::json& values, LrSchedule& out) {
    if (!values.is_object() || values.empty()) s.fail(key, "must be a non-empty map of position -> value, got " + json_summary(values));
    for (const auto& [k, v] : values.items()) {
        long pos = -1;
        try {
            std::size_t used = 0;
            pos = std::stol(k, &used);
            if (used != k.size()) pos = -1;
        } catch (const std::exception&) {
        }
        if (pos < 0) s.fail(key, "positions must be non-negative integers, got \"" + k + "\"");
        if (!v.is_number() || !kNonNegative.contains(v.get<double>()))
            s.fail(key, "\"" + k + "\": must be a number " + kNonNegative.text() + ", got " + json_summary(v));
        out.points.emplace_back(pos, v.get<double>());
    }
    std::sort(out.points.begin(), out.points.end());
    if (out.points.front().first != 0) s.fail(key, "has no value for position 0 (DL4J requires the initial value)");
    out.initial = out.points.front().second;
}

}  // namespace

std::optional<LrSchedule> dl4j_schedule(Place& p, const std::string& key, const nlohmann::json& v, double* fixed) {
    const auto t = typed(v);
    if (!t) p.fail(key, "must be a number or a schedule, got " + json_summary(v));
    Place s = p.nested(*t->body, "." + key + " (" + t->name + ")");
    s.ignore({"@class"});
    LrSchedule out;
    if (t->name == "FixedSchedule") {
        *fixed = need(s, "value", kNonNegative);
        s.note_unread();
        return std::nullopt;
    }
    if (t->name == "RampSchedule") {
        const auto* base = s.object({"baseSchedule"});
        if (!base) s.fail("baseSchedule", "is required");
        auto inner = dl4j_schedule(s, "baseSchedule", *base, fixed);
        if (!inner) {  // a ramp over a fixed value: the value as a map from 0
            inner = LrSchedule{};
            inner->kind = ScheduleKind::Map;
            inner->points = {{0, *fixed}};
            inner->initial = *fixed;
        }
        auto n = s.integer({"numIter"}, 1);
        if (!n) s.fail("numIter", "is required: a positive number of iterations");
        inner->ramp = *n;
        s.note_unread();
        return inner;
    }
    out.by = dl4j_unit(s);
    if (t->name == "MapSchedule") {
        out.kind = ScheduleKind::Map;
        const auto* values = s.object({"values"});
        if (!values) s.fail("values", "is required");
        read_map(s, "values", *values, out);
    } else if (t->name == "StepSchedule") {
        out.kind = ScheduleKind::Exponential;
        out.staircase = true;
        out.initial = need(s, "initialValue", kNonNegative);
        out.rate = need(s, "decayRate", kNonNegative);
        out.decay_steps = need(s, "step", kSteps);
    } else if (t->name == "ExponentialSchedule") {
        out.kind = ScheduleKind::Exponential;
        out.initial = need(s, "initialValue", kNonNegative);
        out.rate = need(s, "gamma", kNonNegative);
    } else if (t->name == "InverseSchedule") {
        out.kind = ScheduleKind::Inverse;
        out.initial = need(s, "initialValue", kNonNegative);
        out.rate = need(s, "gamma", kNonNegative);
        out.power = need(s, "power", Range{0.0, 1e3, false, false});
    } else if (t->name == "PolySchedule") {
        out.kind = ScheduleKind::Poly;
        out.initial = need(s, "initialValue", kNonNegative);
        out.power = need(s, "power", Range{-1e3, 1e3, false, false});
        auto n = s.integer({"maxIter"}, 1);
        if (!n) s.fail("maxIter", "is required: a positive number");
        out.decay_steps = *n;
    } else if (t->name == "SigmoidSchedule") {
        out.kind = ScheduleKind::Sigmoid;
        out.initial = need(s, "initialValue", kNonNegative);
        out.rate = need(s, "gamma", kAny);
        out.step = need(s, "stepSize", kAny);
    } else if (t->name == "CycleSchedule") {
        out.kind = ScheduleKind::Cycle;
        out.initial = need(s, "initialLearningRate", kNonNegative);
        out.max = need(s, "maxLearningRate", kNonNegative);
        if (out.max < out.initial) s.fail("maxLearningRate", "is below initialLearningRate");
        auto len = s.integer({"cycleLength"}, 1);
        if (!len) s.fail("cycleLength", "is required: a positive number");
        out.cycle_length = *len;
        out.annealing_length = s.integer({"annealingLength"}, 0).value_or(0);
        out.annealing_decay = need(s, "annealingDecay", kUnit);
        if ((out.cycle_length - out.annealing_length) / 2 < 1)
            s.fail("annealingLength", "leaves no room to go up and down in a cycle of " + std::to_string(out.cycle_length));
        s.ignore({"stepSize", "increment"});  // derived; Jackson writes the getters too
    } else {
        p.fail(key, "schedule " + t->name +
                        " is not supported (Thresher reads Map, Step, Exponential, Inverse, Poly, Sigmoid, Cycle, Ramp "
                        "and Fixed schedules)");
    }
    s.note_unread();
    return out;
}

std::optional<LrSchedule> dl4j_legacy_policy(Place& c, Place& layer, double lr) {
    const auto policy = c.string({"learningRatePolicy"});
    const std::string n = policy ? normalise_name(*policy) : "none";
    if (n == "none") return std::nullopt;
    LrSchedule out;
    out.initial = lr;
    auto decay = [&] { return need(c, "lrPolicyDecayRate", kNonNegative); };
    auto steps = [&] { return need(c, "lrPolicySteps", kSteps); };
    auto power = [&] { return need(c, "lrPolicyPower", Range{0.0, 1e3, false, false}); };
    if (n == "exponential") {
        out.kind = ScheduleKind::Exponential;
        out.rate = decay();
    } else if (n == "inverse") {
        out.kind = ScheduleKind::Inverse;
        out.rate = decay();
        out.power = power();
    } else if (n == "step") {
        out.kind = ScheduleKind::Exponential;
        out.staircase = true;
        out.rate = decay();
        out.decay_steps = steps();
    } else if (n == "poly") {
        out.kind = ScheduleKind::Polynomial;
        out.end = 0.0;
        out.decay_steps = steps();
        out.power = power();
    } else if (n == "sigmoid") {
        out.kind = ScheduleKind::Sigmoid;
        out.rate = decay();
        out.step = steps();
    } else if (n == "schedule") {
        out.kind = ScheduleKind::Map;
        const auto* map = layer.object({"learningRateSchedule"});
        if (!map) layer.fail("learningRateSchedule", "is required by learningRatePolicy Schedule");
        read_map(layer, "learningRateSchedule", *map, out);
    } else {
        c.fail("learningRatePolicy", *policy + " is not supported (Thresher reads None, Exponential, Inverse, Step, Poly, "
                                               "Sigmoid and Schedule; TorchStep and Score depend on training state)");
    }
    return out;
}

LrSchedule keras_schedule(Place& p, const std::string& key, const nlohmann::json& v) {
    const auto name = text_or(v, "class_name", "");
    const auto& cfg = v.contains("config") && v["config"].is_object() ? v["config"] : v;
    Place s = p.nested(cfg, "." + key + " (" + name + ")");
    s.ignore({"name"});
    LrSchedule out;
    auto staircase = [&] { return s.boolean({"staircase"}).value_or(false); };
    if (name == "ExponentialDecay") {
        out.kind = ScheduleKind::Exponential;
        out.initial = need(s, "initial_learning_rate", kNonNegative);
        out.decay_steps = need(s, "decay_steps", kSteps);
        out.rate = need(s, "decay_rate", kNonNegative);
        out.staircase = staircase();
    } else if (name == "InverseTimeDecay") {
        out.kind = ScheduleKind::Inverse;
        out.initial = need(s, "initial_learning_rate", kNonNegative);
        out.decay_steps = need(s, "decay_steps", kSteps);
        out.rate = need(s, "decay_rate", kNonNegative);
        out.power = 1.0;
        out.staircase = staircase();
    } else if (name == "PolynomialDecay") {
        out.kind = ScheduleKind::Polynomial;
        out.initial = need(s, "initial_learning_rate", kNonNegative);
        out.decay_steps = need(s, "decay_steps", kSteps);
        out.end = s.hyper({"end_learning_rate"}, kNonNegative).value_or(0.0001);
        out.power = s.hyper({"power"}, Range{0.0, 1e3, false, false}).value_or(1.0);
        out.cycle = s.boolean({"cycle"}).value_or(false);
    } else if (name == "CosineDecay") {
        out.kind = ScheduleKind::Cosine;
        out.initial = need(s, "initial_learning_rate", kNonNegative);
        out.decay_steps = need(s, "decay_steps", kSteps);
        out.alpha = s.hyper({"alpha"}, kUnit).value_or(0.0);
        if (auto target = s.hyper({"warmup_target"}, kNonNegative)) {
            out.warmup = true;
            out.warmup_target = *target;
            out.warmup_steps = s.integer({"warmup_steps"}, 0).value_or(0);
        } else {
            s.ignore({"warmup_steps"});  // Keras ignores it without a target
        }
    } else if (name == "PiecewiseConstantDecay") {
        out.kind = ScheduleKind::Map;
        const auto* b = s.array({"boundaries"});
        const auto* vals = s.array({"values"});
        if (!b || !vals) s.fail("needs \"boundaries\" and \"values\"");
        if (vals->size() != b->size() + 1)
            s.fail("values", "must have one more entry than \"boundaries\" (" + std::to_string(b->size()) + "), got " +
                                 std::to_string(vals->size()));
        long previous = 0;
        for (std::size_t k = 0; k < vals->size(); ++k) {
            const auto& value = (*vals)[k];
            if (!value.is_number() || !kNonNegative.contains(value.get<double>()))
                s.fail("values", "[" + std::to_string(k) + "] must be a number " + kNonNegative.text() + ", got " + json_summary(value));
            long pos = 0;
            if (k > 0) {
                const auto& bound = (*b)[k - 1];
                if (!bound.is_number() || bound.get<double>() < 0 || bound.get<double>() > 1e12)
                    s.fail("boundaries", "[" + std::to_string(k - 1) + "] must be a non-negative step, got " + json_summary(bound));
                // The value changes after the boundary step: step <= b keeps the previous one.
                pos = static_cast<long>(std::floor(bound.get<double>())) + 1;
                if (pos <= previous) s.fail("boundaries", "must increase, got " + json_summary(*b));
            }
            previous = pos;
            out.points.emplace_back(pos, value.get<double>());
        }
        out.initial = out.points.front().second;
    } else {
        p.fail(key, "schedule " + (name.empty() ? json_summary(v) : name) +
                        " is not supported (Thresher reads ExponentialDecay, InverseTimeDecay, PolynomialDecay, "
                        "CosineDecay and PiecewiseConstantDecay)");
    }
    s.note_unread();
    return out;
}

}  // namespace thresher::config::import
