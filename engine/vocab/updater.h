// The updaters a model configures (DL4J's, with its formulas: engine/config/README.md lists them):
// parsed by engine/config, run by the backends' updater_step, sized by weight import and the
// Network's flat updater-state buffer. Plain vocabulary, below both config and backend.
#pragma once

namespace thresher::vocab {

enum class UpdaterKind { Sgd, Nesterovs, AdaGrad, RmsProp, Adam };

struct UpdaterSpec {
    UpdaterKind kind = UpdaterKind::Sgd;
    float learning_rate = 0.1f;
    float momentum = 0.9f;      // Nesterovs
    float beta1 = 0.9f;         // Adam
    float beta2 = 0.999f;       // Adam
    float epsilon = 1e-8f;      // AdaGrad, RmsProp, Adam
    float rms_decay = 0.95f;    // RmsProp
    float l1 = 0.f, l2 = 0.f;   // added to the gradient before the updater
};

// Floats of updater state per parameter.
constexpr int updater_state_per_param(UpdaterKind k) {
    switch (k) {
        case UpdaterKind::Sgd: return 0;
        case UpdaterKind::Nesterovs:
        case UpdaterKind::AdaGrad:
        case UpdaterKind::RmsProp: return 1;
        case UpdaterKind::Adam: return 2;
    }
    return 0;
}

}  // namespace thresher::vocab
