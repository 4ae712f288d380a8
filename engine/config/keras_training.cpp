// Keras optimizers map onto DL4J-style updaters with their own defaults (Keras's Adam epsilon is
// 1e-7, not DL4J's 1e-8); what differs in formula is said in a note, what Thresher cannot do at
// all (AMSGrad, centred RMSprop, decoupled weight decay, other optimizers and losses) is refused.
#include "config/keras_training.h"

#include "config/import_support.h"
#include "config/json_fields.h"
#include "config/schedule_import.h"

namespace thresher::config::import {

namespace {

// The learning rate: a number, or a LearningRateSchedule object (its start; the schedule itself
// goes to `schedule`).
float learning_rate(Place& o, float fallback, std::optional<LrSchedule>& schedule) {
    const auto& j = o.json();
    const char* key = j.contains("learning_rate") ? "learning_rate" : "lr";
    if (j.contains(key) && j[key].is_object()) {
        o.ignore({key});
        schedule = keras_schedule(o, key, j[key]);
        return static_cast<float>(schedule->value_at(0, 0));
    }
    return static_cast<float>(o.hyper({"learning_rate", "lr", "learningRate"}, kPositive).value_or(fallback));
}

UpdaterSpec read_optimizer(const nlohmann::json& opt, const std::string& source, const std::string& where,
                           std::vector<std::string>& notes, std::optional<LrSchedule>& schedule) {
    UpdaterSpec u;
    // compile(optimizer="adam") keeps only the name in some versions: Keras's defaults then.
    std::string name;
    nlohmann::json cfg = nlohmann::json::object();
    if (opt.is_string()) {
        name = opt.get<std::string>();
    } else if (opt.is_object()) {
        name = text_or(opt, "class_name", "");
        if (opt.contains("config") && opt["config"].is_object()) cfg = opt["config"];
    }
    const std::string at = where + " (" + (name.empty() ? std::string("optimizer") : name) + ")";
    Place o(cfg, source, at, notes);
    o.ignore({"name", "is_legacy_optimizer", "jit_compile", "loss_scale_factor", "gradient_accumulation_steps",
              "ema_overwrite_frequency", "ema_momentum"});
    for (const char* key : {"clipnorm", "clipvalue", "global_clipnorm"})
        if (o.has(key)) o.note(std::string("\"") + key + "\": gradient clipping ignored (Thresher does not clip)");
    if (o.boolean({"use_ema"}).value_or(false)) o.note("\"use_ema\": the moving average of weights is not kept");
    if (o.has("weight_decay") && o.number({"weight_decay"}).value_or(0.0) != 0.0)
        o.fail("weight_decay", "decoupled weight decay is not supported (use a kernel_regularizer)");
    // Keras 2's "decay": lr / (1 + decay·iterations), an inverse-time schedule (applied below).
    const double decay = o.hyper({"decay"}, kNonNegative).value_or(0.0);

    const std::string n = normalise_name(name);
    if (n == "adam") {
        u.kind = UpdaterKind::Adam;
        u.learning_rate = learning_rate(o, 1e-3f, schedule);
        if (auto v = o.hyper({"beta_1", "beta1"}, kUnitOpenTop)) u.beta1 = static_cast<float>(*v);
        if (auto v = o.hyper({"beta_2", "beta2"}, kUnitOpenTop)) u.beta2 = static_cast<float>(*v);
        u.epsilon = static_cast<float>(o.hyper({"epsilon"}, Range{0.0, 1.0, true, false}).value_or(1e-7));
        if (o.boolean({"amsgrad"}).value_or(false)) o.fail("amsgrad", "AMSGrad is not supported (Thresher has Adam)");
    } else if (n == "sgd") {
        const float lr = learning_rate(o, 0.01f, schedule);
        const double momentum = o.hyper({"momentum"}, kUnit).value_or(0.0);
        const bool nesterov = o.boolean({"nesterov"}).value_or(false);
        u.learning_rate = lr;
        if (momentum == 0.0) {
            u.kind = UpdaterKind::Sgd;
        } else {
            u.kind = UpdaterKind::Nesterovs;
            u.momentum = static_cast<float>(momentum);
            if (!nesterov)
                o.note("SGD with classical momentum " + number_text(u.momentum) +
                       " approximated by Nesterov momentum (Thresher has no classical momentum)");
        }
    } else if (n == "rmsprop") {
        u.kind = UpdaterKind::RmsProp;
        u.learning_rate = learning_rate(o, 1e-3f, schedule);
        u.rms_decay = static_cast<float>(o.hyper({"rho", "decay_rate"}, kUnit).value_or(0.9));
        u.epsilon = static_cast<float>(o.hyper({"epsilon"}, Range{0.0, 1.0, true, false}).value_or(1e-7));
        if (o.hyper({"momentum"}, kUnit).value_or(0.0) != 0.0)
            o.fail("momentum", "RMSprop with momentum is not supported");
        if (o.boolean({"centered"}).value_or(false)) o.fail("centered", "centred RMSprop is not supported");
        o.note("RMSprop: Thresher divides by sqrt(r + epsilon) (DL4J), Keras by sqrt(r) + epsilon");
    } else if (n == "adagrad") {
        u.kind = UpdaterKind::AdaGrad;
        u.learning_rate = learning_rate(o, 1e-3f, schedule);
        u.epsilon = static_cast<float>(o.hyper({"epsilon"}, Range{0.0, 1.0, true, false}).value_or(1e-7));
        if (auto a = o.hyper({"initial_accumulator_value", "initialAccumulatorValue"}, kNonNegative); a && *a != 0.0)
            o.note("\"initial_accumulator_value\": " + number_text(static_cast<float>(*a)) +
                   " ignored: Thresher's AdaGrad history starts at 0");
    } else {
        o.fail("optimizer " + (name.empty() ? opt.dump().substr(0, 120) : name) +
               " is not supported (Thresher has SGD, Adam, RMSprop, Adagrad)");
    }
    if (decay != 0.0) {
        if (schedule) o.fail("decay", "with a learning-rate schedule as well is not supported");
        LrSchedule inv;
        inv.kind = ScheduleKind::Inverse;
        inv.initial = u.learning_rate;
        inv.rate = decay;
        schedule = inv;
    }
    o.note_unread();
    return u;
}

// The loss and whether it takes logits. Keras 2 writes a name, Keras 2.4+/3 possibly an object.
std::pair<LossKind, std::optional<Activation>> read_loss(Place& t, const nlohmann::json& loss) {
    std::string name;
    nlohmann::json cfg = nlohmann::json::object();
    if (loss.is_string()) {
        name = loss.get<std::string>();
    } else if (loss.is_object() && loss.contains("class_name")) {
        name = text_or(loss, "class_name", "");
        if (loss.contains("config") && loss["config"].is_object()) cfg = loss["config"];
    } else {
        t.fail("loss", "must name a loss, got " + loss.dump().substr(0, 120));
    }
    std::vector<std::string> scratch;
    Place c(cfg, t.source(), t.where() + ".loss (" + name + ")", scratch);
    const bool logits = c.boolean({"from_logits"}).value_or(false);
    if (c.hyper({"label_smoothing"}, kUnit).value_or(0.0) != 0.0)
        c.fail("label_smoothing", "label smoothing is not supported");
    if (c.has("ignore_class")) c.fail("ignore_class", "ignoring a class is not supported");
    const std::string n = normalise_name(name);
    if (n == "categoricalcrossentropy" || n == "sparsecategoricalcrossentropy")
        return {LossKind::MultiClassCrossEntropy, logits ? std::optional(Activation::Softmax) : std::nullopt};
    if (n == "binarycrossentropy")
        return {LossKind::BinaryCrossEntropy, logits ? std::optional(Activation::Sigmoid) : std::nullopt};
    if (n == "mse" || n == "meansquarederror")
        return {LossKind::MSE, std::nullopt};
    if (n == "mae" || n == "meanabsoluteerror")
        return {LossKind::MAE, std::nullopt};
    t.fail("loss", "loss " + name + " is not supported (Thresher has categorical_crossentropy, "
                   "sparse_categorical_crossentropy, binary_crossentropy, mean_squared_error, mean_absolute_error)");
}

}  // namespace

KerasTraining read_keras_training(const nlohmann::json& training, const std::string& source, const std::string& where,
                                  std::vector<std::string>& notes) {
    KerasTraining out;
    Place t(training, source, where, notes);
    if (const auto* opt = t.has("optimizer") ? &training["optimizer"]
                          : t.has("optimizer_config") ? &training["optimizer_config"] : nullptr) {
        t.ignore({"optimizer", "optimizer_config"});
        out.updater = read_optimizer(*opt, source, where + (t.has("optimizer") ? ".optimizer" : ".optimizer_config"),
                                     notes, out.schedule);
    }
    if (t.has("loss")) {
        t.ignore({"loss"});
        const auto& loss = training["loss"];
        if (loss.is_object() && !loss.contains("class_name")) {  // {"output name": loss}
            for (const auto& [name, one] : loss.items()) {
                auto [kind, act] = read_loss(t, one);
                out.loss_by_output[name] = {kind, act};
            }
        } else if (loss.is_array()) {  // a loss per output, in output order
            for (const auto& one : loss) {
                auto [kind, act] = read_loss(t, one);
                out.loss_by_position.push_back({kind, act});
            }
        } else {
            auto [kind, act] = read_loss(t, loss);
            out.loss = kind;
            out.logits_activation = act;
        }
    }
    // Loss weights: the sum of the outputs' losses is what Thresher trains, so weights of 1 only.
    for (const char* key : {"loss_weights", "lossWeights"}) {
        if (!t.has(key) || training[key].is_null()) continue;
        const auto& w = training[key];
        bool ones = w.is_array() || w.is_object();
        for (const auto& v : w) ones = ones && v.is_number() && v.get<double>() == 1.0;
        if (!ones) t.fail(key, "weighted output losses are not supported (Thresher sums the outputs' losses), got " + w.dump().substr(0, 120));
    }
    t.ignore({"metrics", "weighted_metrics", "run_eagerly", "steps_per_execution", "jit_compile", "sample_weight_mode",
              "auto_scale_loss", "loss_weights", "lossWeights"});
    t.note_unread();
    return out;
}

}  // namespace thresher::config::import
