// Learning-rate schedules as DL4J and Keras write them, read into Thresher's LrSchedule
// (lr_schedule.h) with each format's formula kept. Unknown schedule classes and out-of-range
// fields are refused naming the field as the file spells it.
//
// DL4J 1.0 ISchedule ("@class": "org.nd4j.linalg.schedule.XSchedule", or 0.9's {"XSchedule": {...}}):
//   MapSchedule {scheduleType, values{"0": v, ...}}          -> map
//   StepSchedule {initialValue, decayRate, step}             -> exponential, staircase, decay_steps step
//   ExponentialSchedule {initialValue, gamma}                -> exponential, decay_steps 1
//   InverseSchedule {initialValue, gamma, power}             -> inverse
//   PolySchedule {initialValue, power, maxIter}              -> poly
//   SigmoidSchedule {initialValue, gamma, stepSize}          -> sigmoid
//   CycleSchedule {initialLearningRate, maxLearningRate, cycleLength, annealingLength, annealingDecay} -> cycle
//   RampSchedule {baseSchedule, numIter}                     -> the base schedule with ramp numIter
//   FixedSchedule {value}                                    -> no schedule (the value)
// DL4J 0.x: the conf's "learningRatePolicy" with "lrPolicyDecayRate", "lrPolicySteps",
// "lrPolicyPower" and the layer's "learningRateSchedule" map, on the layer's learningRate:
//   Exponential lr·d^i, Inverse lr/(1+d·i)^p, Step lr·d^floor(i/s), Poly lr·(1−i/s)^p,
//   Sigmoid lr/(1+exp(−d·(i−s))), Schedule: the map. TorchStep and Score are refused (they depend
//   on state or on the score).
// Keras (optimizer "learning_rate": {"class_name": ..., "config": {...}}), step = updates done:
//   ExponentialDecay, InverseTimeDecay, PolynomialDecay, CosineDecay, PiecewiseConstantDecay
//   (boundaries b, values v: v[k] while b[k−1] < step <= b[k] -> map positions floor(b[k])+1).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/import_support.h"
#include "config/lr_schedule.h"

namespace thresher::config::import {

// A DL4J ISchedule object at `key` of `p`; nullopt for a FixedSchedule (whose value is returned
// in `fixed`).
std::optional<LrSchedule> dl4j_schedule(Place& p, const std::string& key, const nlohmann::json& v, double* fixed);

// The 0.x learning-rate policy of a conf (`c`) applied to a layer's learning rate `lr`; `layer`
// holds the layer's "learningRateSchedule" map for the Schedule policy. nullopt: policy None.
std::optional<LrSchedule> dl4j_legacy_policy(Place& c, Place& layer, double lr);

// A Keras LearningRateSchedule object ({"class_name", "config"}), read at `p`'s `key`.
LrSchedule keras_schedule(Place& p, const std::string& key, const nlohmann::json& v);

}  // namespace thresher::config::import
