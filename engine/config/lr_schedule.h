// Learning-rate schedules: the value of the learning rate at (iteration, epoch), both counted
// from 0 (iteration = updates done before this one, as DL4J's ISchedule and Keras's
// optimizer.iterations count them). One typed value covers what DL4J (ISchedule objects and the
// legacy lrPolicy fields) and Keras (LearningRateSchedule objects) write, with each format's
// formula kept exactly (i is the iteration or the epoch, per `by`):
//
//   map          the value of the largest position <= i          DL4J MapSchedule, lrPolicy Schedule,
//                                                                Keras PiecewiseConstantDecay
//   exponential  initial·rate^(i/decay_steps), floor if staircase DL4J Exponential (decay_steps 1),
//                                                                DL4J Step (staircase), Keras ExponentialDecay
//   inverse      initial/(1 + rate·i/decay_steps)^power (floor)  DL4J Inverse, Keras InverseTimeDecay
//   poly         initial·(1 + i/decay_steps)^power, 0 from       DL4J 1.0 PolySchedule as its code computes
//                decay_steps on                                  (its javadoc says ^−power; the code wins)
//   polynomial   (initial − end)·(1 − min(i,D)/D)^power + end;   Keras PolynomialDecay, DL4J lrPolicy Poly
//                with cycle D grows to D·ceil(i/D)               (end 0)
//   sigmoid      initial/(1 + exp(−rate·(i − step)))             DL4J SigmoidSchedule, lrPolicy Sigmoid
//   cycle        DL4J CycleSchedule (one-cycle: up, down, anneal) initial, max, cycle_length,
//                                                                annealing_length, annealing_decay
//   cosine       Keras CosineDecay: linear warmup from initial to warmup_target over warmup_steps, then
//                peak·((1 − alpha)·½(1 + cos(π·min(j,D)/D)) + alpha), j = i − warmup_steps
//
// `ramp` N (DL4J RampSchedule around any of these): the value times (iteration+1)/N while
// iteration < N − 1. Worked example, exponential initial 0.1 rate 0.5 decay_steps 2 staircase:
// iterations 0,1 → 0.1; 2,3 → 0.05; 4 → 0.025.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace thresher::config {

class JsonFields;

enum class ScheduleKind { Map, Exponential, Inverse, Poly, Polynomial, Sigmoid, Cycle, Cosine };
enum class ScheduleUnit { Iteration, Epoch };

struct LrSchedule {
    ScheduleKind kind = ScheduleKind::Exponential;
    ScheduleUnit by = ScheduleUnit::Iteration;
    double initial = 0.1;
    double rate = 1.0;          // exponential, inverse, sigmoid (DL4J's gamma / decayRate)
    double decay_steps = 1.0;   // exponential, inverse, poly, polynomial, cosine
    double power = 1.0;         // inverse, poly, polynomial
    bool staircase = false;     // exponential, inverse
    double end = 0.0;           // polynomial
    bool cycle = false;         // polynomial
    double step = 0.0;          // sigmoid
    double max = 0.0;           // cycle
    long cycle_length = 1, annealing_length = 0;  // cycle
    double annealing_decay = 0.1;                 // cycle
    double alpha = 0.0;         // cosine
    long warmup_steps = 0;      // cosine
    bool warmup = false;        // cosine: Keras's warmup_target is set
    double warmup_target = 0.0; // cosine
    std::vector<std::pair<long, double>> points;  // map: (position, value), sorted, first at 0
    long ramp = 0;              // 0: none

    double value_at(long iteration, int epoch) const;
    // Thresher JSON (engine/config/README.md); from_json checks every field and range.
    nlohmann::json to_json() const;
    static LrSchedule from_json(const nlohmann::json& j, const std::string& source, const std::string& path);
    // One line for people: "exponential by iteration: 0.1 · 0.5^floor(i/2)".
    std::string describe() const;
};

std::string_view to_string(ScheduleKind);

}  // namespace thresher::config
