// Plain loops for every backend op, in double, written to be obviously right rather than fast:
// the yardstick test_backend_parity holds every backend to (the CPU backend included). Layouts and
// semantics are backend.h's: NCHW activations, dense W [in x out], conv W OIHW, windows clipped
// to the input (padding never wins a maximum nor counts in an average), batch-norm variance
// divided by N*H*W, activation derivatives from the output.
#pragma once

#include <vector>

#include "backend/backend.h"

namespace reference {

using Vec = std::vector<float>;
using thresher::backend::ActivationSpec;

Vec activation_forward(ActivationSpec, const Vec& x, int rows, int cols);
Vec activation_backward(ActivationSpec, const Vec& y, const Vec& dy, int rows, int cols);

struct Grads {
    Vec dx, dw, db;
};

Vec dense_forward(const thresher::backend::DenseDesc&, const Vec& x, const Vec& w, const Vec& b);
Grads dense_backward(const thresher::backend::DenseDesc&, const Vec& x, const Vec& w, const Vec& dz);

// Softmax counts as identity here, as in the backends' convolutions.
Vec conv_forward(const thresher::backend::ConvDesc&, const Vec& x, const Vec& w, const Vec& b);
Grads conv_backward(const thresher::backend::ConvDesc&, const Vec& x, const Vec& w, const Vec& dz);

Vec pool_forward(const thresher::backend::PoolDesc&, const Vec& x);
// Max pooling routes each gradient to the first largest input of its window.
Vec pool_backward(const thresher::backend::PoolDesc&, const Vec& x, const Vec& dy);

struct BatchNormForward {
    Vec y, mean, var;
};
BatchNormForward batch_norm_training(const thresher::backend::BatchNormDesc&, const Vec& x,
                                     const Vec& gamma, const Vec& beta);
Vec batch_norm_inference(const thresher::backend::BatchNormDesc&, const Vec& x, const Vec& gamma,
                         const Vec& beta, const Vec& mean, const Vec& var);
struct BatchNormGrads {
    Vec dx, dgamma, dbeta;
};
BatchNormGrads batch_norm_backward(const thresher::backend::BatchNormDesc&, const Vec& x,
                                   const Vec& dy, const Vec& gamma, const Vec& mean, const Vec& var);

// One updater step in double: `g` becomes the update, `state` as in backend.h ([m..., v...]).
void updater_step(const thresher::backend::UpdaterSpec&, std::vector<double>& g,
                  std::vector<double>& state, const Vec& params, long iteration);

// The CPU backend's dropout mask: (u < retain) / retain with u from derive_seed(derive_seed(seed,
// "DROP"), i).
Vec dropout_mask(std::size_t n, float retain, unsigned long long seed);

}  // namespace reference
