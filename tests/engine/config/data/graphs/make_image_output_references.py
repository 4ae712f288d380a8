#!/usr/bin/env python3
"""Writes a Keras 2 model with image outputs and its outputs computed independently by PyTorch.

Run once with Debian's Python (/usr/bin/python3: python3-torch, python3-h5py, python3-numpy);
the files are committed and read by tests/engine/config/test_graph_weights.cpp, which imports the
.h5 with Thresher and compares its predictions with PyTorch's (float64) within 1e-4.

  keras2_unet_two_image_outputs.h5   a Keras 2 functional model.save() layout, a small U-Net:
      conv_a (3x3 same, relu) -> SpatialDropout2D -> MaxPooling2D -> conv_b (3x3 same, relu)
      -> UpSampling2D -> Concatenate([up, sd]) -> Conv2DTranspose (3x3, stride 1, same, tanh),
      then two image outputs: "seg", a 1x1 Conv2D whose softmax is over the channels of each pixel
      (channels last: Keras's softmax over the last axis), compiled with categorical
      cross-entropy, and "recon", a 1x1 Conv2D with a sigmoid, binary cross-entropy
  keras2_unet_two_image_outputs.expected.json
      inputs (C x H x W per sample) and PyTorch's outputs: seg's 3 x 6 x 6 values then recon's
      1 x 6 x 6, each in NCHW order (Thresher's), side by side
"""
import json
import os

import h5py
import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261127)
N, C, H, W = 3, 2, 6, 6


def arr(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def keras_layer(cls, name, config, inbound):
    config = dict(config, name=name, trainable=True, dtype="float32")
    nodes = [[[i, 0, 0, {}] for i in inbound]] if inbound else []
    return {"class_name": cls, "name": name, "config": config, "inbound_nodes": nodes}


def conv(filters, k, act, cls_extra=None):
    c = {"filters": filters, "kernel_size": [k, k], "strides": [1, 1], "padding": "same", "data_format": "channels_last",
         "dilation_rate": [1, 1], "activation": act, "use_bias": True}
    c.update(cls_extra or {})
    return c


def main():
    # Keras layouts: Conv2D kernels [kh, kw, in, out]; Conv2DTranspose [kh, kw, out, in].
    ka, ba = arr(3, 3, C, 4), arr(4, scale=0.1)
    kb, bb = arr(3, 3, 4, 4), arr(4, scale=0.1)
    kt, bt = arr(3, 3, 4, 8), arr(4, scale=0.1)
    ks, bs = arr(1, 1, 4, 3, scale=1.0), arr(3, scale=0.1)
    kr, br = arr(1, 1, 4, 1, scale=1.0), arr(1, scale=0.1)
    layers = [
        keras_layer("InputLayer", "image", {"batch_input_shape": [None, H, W, C], "sparse": False}, []),
        keras_layer("Conv2D", "conv_a", conv(4, 3, "relu"), ["image"]),
        keras_layer("SpatialDropout2D", "sd", {"rate": 0.3, "noise_shape": None, "seed": None}, ["conv_a"]),
        keras_layer("MaxPooling2D", "pool", {"pool_size": [2, 2], "strides": [2, 2], "padding": "valid",
                                             "data_format": "channels_last"}, ["sd"]),
        keras_layer("Conv2D", "conv_b", conv(4, 3, "relu"), ["pool"]),
        keras_layer("UpSampling2D", "up", {"size": [2, 2], "data_format": "channels_last", "interpolation": "nearest"}, ["conv_b"]),
        keras_layer("Concatenate", "skip", {"axis": -1}, ["up", "sd"]),
        keras_layer("Conv2DTranspose", "tconv", conv(4, 3, "tanh", {"output_padding": None}), ["skip"]),
        keras_layer("Conv2D", "seg", conv(3, 1, "softmax"), ["tconv"]),
        keras_layer("Conv2D", "recon", conv(1, 1, "sigmoid"), ["tconv"]),
    ]
    model = {"class_name": "Functional", "config": {"name": "unet", "layers": layers, "input_layers": [["image", 0, 0]],
                                                     "output_layers": [["seg", 0, 0], ["recon", 0, 0]]},
             "keras_version": "2.4.0", "backend": "tensorflow"}
    training = {"loss": {"seg": "categorical_crossentropy", "recon": "binary_crossentropy"}, "metrics": [],
                "weighted_metrics": None, "loss_weights": None,
                "optimizer_config": {"class_name": "Adam", "config": {"name": "Adam", "learning_rate": 0.001, "beta_1": 0.9,
                                                                       "beta_2": 0.999, "epsilon": 1e-07, "amsgrad": False}}}
    weights = {"conv_a": [("kernel:0", ka), ("bias:0", ba)], "conv_b": [("kernel:0", kb), ("bias:0", bb)],
               "tconv": [("kernel:0", kt), ("bias:0", bt)], "seg": [("kernel:0", ks), ("bias:0", bs)],
               "recon": [("kernel:0", kr), ("bias:0", br)]}
    names = [l["name"] for l in layers]
    with h5py.File(os.path.join(HERE, "keras2_unet_two_image_outputs.h5"), "w") as f:
        f.attrs["keras_version"] = "2.4.0"
        f.attrs["backend"] = "tensorflow"
        f.attrs["model_config"] = json.dumps(model)
        f.attrs["training_config"] = json.dumps(training)
        g = f.create_group("model_weights")
        g.attrs["layer_names"] = np.array([n.encode() for n in names])
        g.attrs["backend"] = "tensorflow"
        g.attrs["keras_version"] = "2.4.0"
        for n in names:
            lg = g.create_group(n)
            ws = weights.get(n, [])
            lg.attrs["weight_names"] = np.array([(n + "/" + w).encode() for w, _ in ws]) if ws else np.array([], dtype=np.float32)
            for w, v in ws:
                lg.create_dataset(n + "/" + w, data=np.ascontiguousarray(v, dtype=np.float32))

    # PyTorch, float64, NCHW. Conv2d weights [out, in, kh, kw]; ConvTranspose2d [in, out, kh, kw].
    t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))
    oihw = lambda k: t(np.transpose(k, (3, 2, 0, 1)))
    x = arr(N, C, H, W, scale=1.0)
    a = F.relu(F.conv2d(t(x), oihw(ka), t(ba), padding=1))  # SpatialDropout2D: identity in inference
    b = F.relu(F.conv2d(F.max_pool2d(a, 2), oihw(kb), t(bb), padding=1))
    u = F.interpolate(b, scale_factor=2, mode="nearest")
    skip = torch.cat([u, a], dim=1)
    # Keras "same" at stride 1 with a 3x3 kernel: the full output cropped by 1 on each side.
    y = torch.tanh(F.conv_transpose2d(skip, t(np.transpose(kt, (3, 2, 0, 1))), t(bt), stride=1, padding=1))
    seg = F.softmax(F.conv2d(y, oihw(ks), t(bs)), dim=1)
    recon = torch.sigmoid(F.conv2d(y, oihw(kr), t(br)))
    out = torch.cat([seg.reshape(N, -1), recon.reshape(N, -1)], dim=1).numpy()
    with open(os.path.join(HERE, "keras2_unet_two_image_outputs.expected.json"), "w") as f:
        json.dump({"shape": [C, H, W], "inputs": x.reshape(N, -1).tolist(), "outputs": out.tolist()}, f)


main()
