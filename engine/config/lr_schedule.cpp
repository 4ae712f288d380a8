#include "config/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "config/json_fields.h"
#include "config/model_config.h"

namespace thresher::config {

namespace {

const std::vector<std::string> kKinds{"map", "exponential", "inverse", "poly", "polynomial", "sigmoid", "cycle", "cosine"};

std::string num(double v) {
    // Shortest form that reads back as the same float: what the user wrote.
    std::ostringstream s;
    s << decimal(static_cast<float>(v));
    return s.str();
}

double base_value(const LrSchedule& s, long i) {
    const double x = static_cast<double>(i);
    switch (s.kind) {
        case ScheduleKind::Map: {
            // The last point at or before i (points are sorted and start at 0).
            double v = s.points.front().second;
            for (const auto& [pos, value] : s.points) {
                if (pos > i) break;
                v = value;
            }
            return v;
        }
        case ScheduleKind::Exponential: {
            double p = x / s.decay_steps;
            if (s.staircase) p = std::floor(p);
            return s.initial * std::pow(s.rate, p);
        }
        case ScheduleKind::Inverse: {
            double p = x / s.decay_steps;
            if (s.staircase) p = std::floor(p);
            return s.initial / std::pow(1.0 + s.rate * p, s.power);
        }
        case ScheduleKind::Poly:
            if (x >= s.decay_steps) return 0.0;
            return s.initial * std::pow(1.0 + x / s.decay_steps, s.power);
        case ScheduleKind::Polynomial: {
            double d = s.decay_steps, step = x;
            if (s.cycle)
                d *= i == 0 ? 1.0 : std::ceil(x / s.decay_steps);
            else
                step = std::min(step, d);
            return (s.initial - s.end) * std::pow(1.0 - step / d, s.power) + s.end;
        }
        case ScheduleKind::Sigmoid: return s.initial / (1.0 + std::exp(-s.rate * (x - s.step)));
        case ScheduleKind::Cycle: {
            const long step_size = (s.cycle_length - s.annealing_length) / 2;
            const double increment = (s.max - s.initial) / static_cast<double>(step_size);
            const long pos = i % s.cycle_length;
            if (pos < step_size) return s.initial + increment * static_cast<double>(pos);
            if (pos < 2 * step_size) return s.max - increment * static_cast<double>(pos - step_size);
            return s.initial * std::pow(s.annealing_decay, static_cast<double>(s.annealing_length - (s.cycle_length - pos)));
        }
        case ScheduleKind::Cosine: {
            const double warm = static_cast<double>(s.warmup_steps);
            double step = x;
            if (s.warmup) {
                step = std::min(step, s.decay_steps + warm);
                if (step < warm) return (s.warmup_target - s.initial) * (step / warm) + s.initial;
                step -= warm;
            } else {
                step = std::min(step, s.decay_steps);
            }
            const double from = s.warmup ? s.warmup_target : s.initial;
            const double cosine = 0.5 * (1.0 + std::cos(std::numbers::pi * step / s.decay_steps));
            return from * ((1.0 - s.alpha) * cosine + s.alpha);
        }
    }
    return s.initial;
}

}  // namespace

std::string_view to_string(ScheduleKind k) { return kKinds[static_cast<int>(k)]; }

double LrSchedule::value_at(long iteration, int epoch) const {
    const long i = by == ScheduleUnit::Epoch ? epoch : iteration;
    double v = base_value(*this, std::max(0L, i));
    // DL4J's RampSchedule counts iterations whatever the base schedule's unit.
    if (ramp > 0 && iteration < ramp - 1) v *= static_cast<double>(iteration + 1) / static_cast<double>(ramp);
    return v;
}

nlohmann::json LrSchedule::to_json() const {
    nlohmann::json j{{"type", kKinds[static_cast<int>(kind)]}, {"by", by == ScheduleUnit::Epoch ? "epoch" : "iteration"}};
    auto d = [](double v) { return decimal(static_cast<float>(v)); };
    switch (kind) {
        case ScheduleKind::Map: {
            auto& values = j["values"] = nlohmann::json::object();
            for (const auto& [pos, v] : points) values[std::to_string(pos)] = d(v);
            break;
        }
        case ScheduleKind::Exponential:
        case ScheduleKind::Inverse:
            j["initial"] = d(initial);
            j["rate"] = d(rate);
            j["decay_steps"] = d(decay_steps);
            j["staircase"] = staircase;
            if (kind == ScheduleKind::Inverse) j["power"] = d(power);
            break;
        case ScheduleKind::Poly:
            j["initial"] = d(initial);
            j["decay_steps"] = d(decay_steps);
            j["power"] = d(power);
            break;
        case ScheduleKind::Polynomial:
            j["initial"] = d(initial);
            j["end"] = d(end);
            j["decay_steps"] = d(decay_steps);
            j["power"] = d(power);
            j["cycle"] = cycle;
            break;
        case ScheduleKind::Sigmoid:
            j["initial"] = d(initial);
            j["rate"] = d(rate);
            j["step"] = d(step);
            break;
        case ScheduleKind::Cycle:
            j["initial"] = d(initial);
            j["max"] = d(max);
            j["cycle_length"] = cycle_length;
            j["annealing_length"] = annealing_length;
            j["annealing_decay"] = d(annealing_decay);
            break;
        case ScheduleKind::Cosine:
            j["initial"] = d(initial);
            j["decay_steps"] = d(decay_steps);
            j["alpha"] = d(alpha);
            if (warmup) {
                j["warmup_target"] = d(warmup_target);
                j["warmup_steps"] = warmup_steps;
            }
            break;
    }
    if (ramp > 0) j["ramp"] = ramp;
    return j;
}

LrSchedule LrSchedule::from_json(const nlohmann::json& j, const std::string& source, const std::string& path) {
    JsonFields f(j, source, path);
    LrSchedule s;
    auto kind = f.choice("type", kKinds);
    if (!kind) f.fail("type", "is required (one of map, exponential, inverse, poly, polynomial, sigmoid, cycle, cosine)");
    s.kind = static_cast<ScheduleKind>(*kind);
    if (auto by = f.choice("by", {"iteration", "epoch"})) s.by = *by == 1 ? ScheduleUnit::Epoch : ScheduleUnit::Iteration;
    constexpr double kBig = 1e12;
    auto required = [&](const char* key, double lo, double hi) {
        auto v = f.number(key, lo, hi);
        if (!v) f.fail(key, "is required for a " + std::string(kKinds[*kind]) + " schedule");
        return *v;
    };
    auto positive = [&](const char* key) {
        const double v = required(key, 0.0, kBig);
        if (v <= 0.0) f.fail(key, "must be > 0, got " + num(v));
        return v;
    };
    switch (s.kind) {
        case ScheduleKind::Map: {
            const auto* values = f.object("values");
            if (!values || values->empty()) f.fail("values", "is required: {\"0\": lr, \"<position>\": lr, ...}");
            for (const auto& [key, v] : values->items()) {
                long pos = -1;
                try {
                    std::size_t used = 0;
                    pos = std::stol(key, &used);
                    if (used != key.size()) pos = -1;
                } catch (const std::exception&) {
                }
                if (pos < 0) f.fail("values", "positions must be non-negative integers, got \"" + key + "\"");
                if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0.0 || v.get<double>() > 1e6)
                    f.fail("values", "\"" + key + "\": must be a number in [0, 1e6], got " + json_summary(v));
                s.points.emplace_back(pos, v.get<double>());
            }
            std::sort(s.points.begin(), s.points.end());
            if (s.points.front().first != 0) f.fail("values", "must have a value for position 0 (the initial learning rate)");
            s.initial = s.points.front().second;
            break;
        }
        case ScheduleKind::Exponential:
        case ScheduleKind::Inverse:
            s.initial = required("initial", 0.0, 1e6);
            s.rate = required("rate", 0.0, kBig);
            s.decay_steps = f.has("decay_steps") ? positive("decay_steps") : 1.0;
            s.staircase = f.boolean("staircase").value_or(false);
            if (s.kind == ScheduleKind::Inverse) s.power = f.number("power", 0.0, 1e3).value_or(1.0);
            break;
        case ScheduleKind::Poly:
            s.initial = required("initial", 0.0, 1e6);
            s.decay_steps = positive("decay_steps");
            s.power = required("power", -1e3, 1e3);
            break;
        case ScheduleKind::Polynomial:
            s.initial = required("initial", 0.0, 1e6);
            s.end = f.number("end", 0.0, 1e6).value_or(0.0);
            s.decay_steps = positive("decay_steps");
            s.power = f.number("power", 0.0, 1e3).value_or(1.0);
            s.cycle = f.boolean("cycle").value_or(false);
            break;
        case ScheduleKind::Sigmoid:
            s.initial = required("initial", 0.0, 1e6);
            s.rate = required("rate", -kBig, kBig);
            s.step = required("step", -kBig, kBig);
            break;
        case ScheduleKind::Cycle: {
            s.initial = required("initial", 0.0, 1e6);
            s.max = required("max", 0.0, 1e6);
            if (s.max < s.initial) f.fail("max", "must be >= initial (" + num(s.initial) + "), got " + num(s.max));
            auto len = f.integer("cycle_length", 1, 1 << 30);
            if (!len) f.fail("cycle_length", "is required for a cycle schedule");
            s.cycle_length = *len;
            s.annealing_length = f.integer("annealing_length", 0, 1 << 30).value_or(0);
            if ((s.cycle_length - s.annealing_length) / 2 < 1)
                f.fail("annealing_length", "leaves no room to go up and down: cycle_length " + std::to_string(s.cycle_length) +
                                               ", annealing_length " + std::to_string(s.annealing_length));
            s.annealing_decay = f.number("annealing_decay", 0.0, 1.0).value_or(0.1);
            break;
        }
        case ScheduleKind::Cosine:
            s.initial = required("initial", 0.0, 1e6);
            s.decay_steps = positive("decay_steps");
            s.alpha = f.number("alpha", 0.0, 1.0).value_or(0.0);
            if (auto t = f.number("warmup_target", 0.0, 1e6)) s.warmup = true, s.warmup_target = *t;
            s.warmup_steps = f.integer("warmup_steps", 0, 1 << 30).value_or(0);
            if (s.warmup_steps > 0 && !s.warmup) f.fail("warmup_steps", "needs \"warmup_target\"");
            break;
    }
    s.ramp = f.integer("ramp", 0, 1 << 30).value_or(0);
    f.finish();
    return s;
}

std::string LrSchedule::describe() const {
    const std::string i = by == ScheduleUnit::Epoch ? "epoch" : "i";
    std::string d = std::string(to_string(kind)) + " by " + (by == ScheduleUnit::Epoch ? "epoch" : "iteration") + ": ";
    auto frac = [&] { return decay_steps == 1.0 ? i : i + "/" + num(decay_steps); };
    auto maybe_floor = [&](const std::string& x) { return staircase ? "floor(" + x + ")" : x; };
    switch (kind) {
        case ScheduleKind::Map:
            for (std::size_t k = 0; k < points.size(); ++k)
                d += (k ? ", " : "") + std::to_string(points[k].first) + "→" + num(points[k].second);
            break;
        case ScheduleKind::Exponential: d += num(initial) + "·" + num(rate) + "^" + maybe_floor(frac()); break;
        case ScheduleKind::Inverse:
            d += num(initial) + "/(1 + " + num(rate) + "·" + maybe_floor(frac()) + ")^" + num(power);
            break;
        case ScheduleKind::Poly:
            d += num(initial) + "·(1 + " + i + "/" + num(decay_steps) + ")^" + num(power) + ", 0 from " + num(decay_steps);
            break;
        case ScheduleKind::Polynomial:
            d += "(" + num(initial) + " − " + num(end) + ")·(1 − " + i + "/" + num(decay_steps) + ")^" + num(power) + " + " +
                 num(end) + (cycle ? " (cycling)" : "");
            break;
        case ScheduleKind::Sigmoid: d += num(initial) + "/(1 + exp(−" + num(rate) + "·(" + i + " − " + num(step) + ")))"; break;
        case ScheduleKind::Cycle:
            d += num(initial) + " → " + num(max) + " → " + num(initial) + " over " + std::to_string(cycle_length) +
                 ", annealing " + std::to_string(annealing_length) + " ×" + num(annealing_decay);
            break;
        case ScheduleKind::Cosine:
            if (warmup) d += "warmup " + num(initial) + " → " + num(warmup_target) + " over " + std::to_string(warmup_steps) + ", ";
            d += "cosine from " + num(warmup ? warmup_target : initial) + " over " + num(decay_steps) + ", floor ×" + num(alpha);
            break;
    }
    if (ramp > 0) d += "; ramped up over " + std::to_string(ramp) + " iterations";
    return d;
}

}  // namespace thresher::config
