// Output-layer losses, on host arrays (the output is [batch x outputs], small enough to bring
// to the host on any backend). Losses are means over the batch, as DL4J reports its score.
//   mcxent / negativeloglikelihood (softmax):  L = -1/B sum t log p,            dL/dz = (p - t)/B
//   the same on a sigmoid or softplus output (DL4J allows it, as in its two-output graph example):
//                                               dL/dp = -t / (B max(p, 1e-10)), through the activation
//   xent (sigmoid):   L = -1/B sum [t log p + (1-t) log(1-p)],                  dL/dz = (p - t)/B
//   mse (any element-wise activation):  L = 1/B sum_rows mean_cols (p - t)^2,  dL/dp = 2(p-t)/(B K)
//   mae (any element-wise activation):  L = 1/B sum_rows mean_cols |p - t|,    dL/dp = sign(p-t)/(B K)
// An image output (C x H x W) passes B x H x W rows of C values: each pixel is an example, as in
// DL4J's CnnLossLayer, but the sum over pixels is averaged (DL4J sums them), so a sample's loss is
// its pixels' mean and matches Keras for mse, mae and categorical cross-entropy (mcxent on a
// softmax over the channels of each pixel: dL/dz = (p - t)/(B H W)). Binary cross-entropy sums
// over channels like the flat case (Keras means over them: the same for one channel). The values
// arrive in NCHW order, not pixel by pixel: every formula is element-wise given its normaliser.
#pragma once

#include "config/model_config.h"

namespace thresher::nn {

struct LossResult {
    double loss = 0.0;
    // True: `delta` is dL/d(pre-activation). False: dL/d(output); the activation's derivative
    // still has to be applied.
    bool wrt_preactivation = true;
};

// `softmax`: the output layer's activation is softmax (cross-entropy's (p - t) shortcut holds).
LossResult compute_loss(config::LossKind, const float* output, const float* targets, float* delta, int rows,
                        int cols, bool softmax = true);

}  // namespace thresher::nn
