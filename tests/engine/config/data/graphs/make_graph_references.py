#!/usr/bin/env python3
"""Writes graph models with known weights and their outputs computed independently by PyTorch.

Run once (Debian: python3-torch, python3-h5py, python3-numpy); the outputs are committed and read
by tests/engine/config/test_graph_weights.cpp, which imports each file with Thresher and compares
its predictions with PyTorch's (float64) within 1e-4.

  keras2_residual_concat.h5             Keras 2 model.save() layout of a functional model:
                                        conv -> bn -> conv, add(., bn) -> relu; a 1x1 conv of the
                                        input beside it; concatenate; global average pooling; dense.
  dl4j_residual_concat.json             DL4J ComputationGraphConfiguration of the same graph
  dl4j_residual_concat.coefficients.json  its parameters in DL4J's flattened order (the test zips
                                        them as coefficients.bin): vertices in DL4J's topological
                                        order, which here puts conv_c before bn_a
  keras2_depthwise_separable.h5         a Keras 2 Sequential model: DepthwiseConv2D (multiplier 2),
                                        SeparableConv2D, global average pooling, dense
  keras2_conv_transpose.h5              a Keras 2 Sequential model with two Conv2DTranspose layers
                                        (valid, stride 2; same, strides 2x1)
  keras2_two_inputs_two_outputs.h5      a Keras 2 functional model with an image and a flat input and
                                        two outputs (softmax and sigmoid heads)
  keras2_reshape_permute.h5             a Keras 2 Sequential model: Dense, Reshape to an image,
                                        Conv2D, Permute, Conv2D, Permute, Flatten, Dense
  *.expected.json                       inputs (C x H x W per sample; several inputs side by side) and
                                        PyTorch's outputs (several outputs side by side)
"""
import json
import os

import h5py
import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261127)
N, C, H, W = 4, 3, 8, 8


def arr(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def reference(x, p, eps):
    """PyTorch, float64, NCHW: the graph both files describe."""
    t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))
    x = t(x)
    a = F.relu(F.conv2d(x, t(p["conv_a_w"]), t(p["conv_a_b"]), padding=1))
    a = F.batch_norm(a, t(p["bn_mean"]), t(p["bn_var"]), t(p["bn_gamma"]), t(p["bn_beta"]), training=False, eps=eps)
    b = F.conv2d(a, t(p["conv_b_w"]), t(p["conv_b_b"]), padding=1)
    r = F.relu(b + a)
    c = torch.tanh(F.conv2d(x, t(p["conv_c_w"]), t(p["conv_c_b"])))
    cat = torch.cat([r, c], dim=1)
    g = cat.mean(dim=(2, 3))
    return F.softmax(g @ t(p["dense_w"]).T + t(p["dense_b"]), dim=1).numpy()


def params():
    return {
        "conv_a_w": arr(4, C, 3, 3), "conv_a_b": arr(4, scale=0.1),
        "bn_gamma": (1 + arr(4, scale=0.2)), "bn_beta": arr(4, scale=0.2),
        "bn_mean": arr(4, scale=0.3), "bn_var": (0.5 + np.abs(arr(4))).astype(np.float32),
        "conv_b_w": arr(4, 4, 3, 3), "conv_b_b": arr(4, scale=0.1),
        "conv_c_w": arr(2, C, 1, 1), "conv_c_b": arr(2, scale=0.1),
        "dense_w": arr(5, 6), "dense_b": arr(5, scale=0.1),  # PyTorch's [out, in]
    }


def write_expected(name, x, y):
    with open(os.path.join(HERE, name + ".expected.json"), "w") as f:
        json.dump({"shape": [C, H, W], "inputs": x.reshape(N, -1).tolist(), "outputs": y.tolist()}, f)


def write_keras2_h5(name, model, layer_names, weights):
    """As Keras 2's model.save(): model_config, then model_weights/<layer>/<layer>/<var>:0."""
    with h5py.File(os.path.join(HERE, name), "w") as f:
        f.attrs["keras_version"] = "2.4.0"
        f.attrs["backend"] = "tensorflow"
        f.attrs["model_config"] = json.dumps(model)
        g = f.create_group("model_weights")
        g.attrs["layer_names"] = np.array([n.encode() for n in layer_names])
        g.attrs["backend"] = "tensorflow"
        g.attrs["keras_version"] = "2.4.0"
        for n in layer_names:
            lg = g.create_group(n)
            ws = weights.get(n, [])
            lg.attrs["weight_names"] = np.array([(n + "/" + w).encode() for w, _ in ws]) if ws else np.array([], dtype=np.float32)
            for w, v in ws:
                lg.create_dataset(n + "/" + w, data=np.ascontiguousarray(v, dtype=np.float32))


def keras_layer(cls, name, config, inbound):
    config = dict(config, name=name, trainable=True, dtype="float32")
    nodes = [[[i, 0, 0, {}] for i in inbound]] if inbound else []
    return {"class_name": cls, "name": name, "config": config, "inbound_nodes": nodes}


def write_keras():
    p = params()
    conv = lambda filters, k, pad, act: {"filters": filters, "kernel_size": [k, k], "strides": [1, 1], "padding": pad,
                                         "data_format": "channels_last", "dilation_rate": [1, 1], "activation": act,
                                         "use_bias": True}
    layers = [
        keras_layer("InputLayer", "input_1", {"batch_input_shape": [None, H, W, C], "sparse": False}, []),
        keras_layer("Conv2D", "conv_a", conv(4, 3, "same", "relu"), ["input_1"]),
        keras_layer("BatchNormalization", "bn_a", {"axis": -1, "momentum": 0.99, "epsilon": 0.001, "center": True, "scale": True},
                    ["conv_a"]),
        keras_layer("Conv2D", "conv_b", conv(4, 3, "same", "linear"), ["bn_a"]),
        keras_layer("Add", "add_1", {}, ["conv_b", "bn_a"]),
        keras_layer("Activation", "act_1", {"activation": "relu"}, ["add_1"]),
        keras_layer("Conv2D", "conv_c", conv(2, 1, "valid", "tanh"), ["input_1"]),
        keras_layer("Concatenate", "concat_1", {"axis": -1}, ["act_1", "conv_c"]),
        keras_layer("GlobalAveragePooling2D", "gap", {"data_format": "channels_last"}, ["concat_1"]),
        keras_layer("Dense", "dense_out", {"units": 5, "activation": "softmax", "use_bias": True}, ["gap"]),
    ]
    model = {"class_name": "Model", "config": {"name": "residual_concat", "layers": layers,
                                                "input_layers": [["input_1", 0, 0]], "output_layers": [["dense_out", 0, 0]]},
             "keras_version": "2.4.0", "backend": "tensorflow"}
    # Keras's layouts: conv kernels H x W x in x out, dense kernels in x out.
    hwio = lambda w: np.transpose(w, (2, 3, 1, 0))
    weights = {
        "conv_a": [("kernel:0", hwio(p["conv_a_w"])), ("bias:0", p["conv_a_b"])],
        "bn_a": [("gamma:0", p["bn_gamma"]), ("beta:0", p["bn_beta"]), ("moving_mean:0", p["bn_mean"]),
                 ("moving_variance:0", p["bn_var"])],
        "conv_b": [("kernel:0", hwio(p["conv_b_w"])), ("bias:0", p["conv_b_b"])],
        "conv_c": [("kernel:0", hwio(p["conv_c_w"])), ("bias:0", p["conv_c_b"])],
        "dense_out": [("kernel:0", p["dense_w"].T), ("bias:0", p["dense_b"])],
    }
    write_keras2_h5("keras2_residual_concat.h5", model, [l["name"] for l in layers], weights)
    x = arr(N, C, H, W, scale=1.0)
    write_expected("keras2_residual_concat", x, reference(x, p, 1e-3))


def dl4j_conf(cls, fields):
    fields = dict(fields, **{"@class": "org.deeplearning4j.nn.conf.layers." + cls})
    return {"layer": fields, "seed": 7, "miniBatch": True, "minimize": True,
            "optimizationAlgo": "STOCHASTIC_GRADIENT_DESCENT", "stepFunction": None, "variables": []}


def write_dl4j():
    p = params()
    act = lambda a: {"@class": "org.nd4j.linalg.activations.impl.Activation" + a}
    upd = {"@class": "org.nd4j.linalg.learning.config.Sgd", "learningRate": 0.01}
    init = {"@class": "org.deeplearning4j.nn.weights.WeightInitXavier"}
    conv = lambda name, nin, nout, k, mode, a: dl4j_conf("ConvolutionLayer", {
        "layerName": name, "nin": nin, "nout": nout, "kernelSize": [k, k], "stride": [1, 1], "padding": [0, 0],
        "dilation": [1, 1], "convolutionMode": mode, "hasBias": True, "activationFn": act(a), "iupdater": upd, "weightInitFn": init})
    lv = lambda conf: {"@class": "org.deeplearning4j.nn.conf.graph.LayerVertex", "layerConf": conf, "outputVertex": False,
                       "preProcessor": None}
    vertices = {
        "conv_a": lv(conv("conv_a", C, 4, 3, "Same", "ReLU")),
        "bn_a": lv(dl4j_conf("BatchNormalization", {"layerName": "bn_a", "nin": 4, "nout": 4, "eps": 1e-5, "decay": 0.9,
                                                    "iupdater": upd, "lockGammaBeta": False})),
        "conv_b": lv(conv("conv_b", 4, 4, 3, "Same", "Identity")),
        "add_1": {"@class": "org.deeplearning4j.nn.conf.graph.ElementWiseVertex", "op": "Add"},
        "act_1": lv(dl4j_conf("ActivationLayer", {"layerName": "act_1", "activationFn": act("ReLU")})),
        "conv_c": lv(conv("conv_c", C, 2, 1, "Truncate", "TanH")),
        "concat_1": {"@class": "org.deeplearning4j.nn.conf.graph.MergeVertex"},
        "gap": lv(dl4j_conf("GlobalPoolingLayer", {"layerName": "gap", "poolingType": "AVG", "collapseDimensions": True})),
        "out": lv(dl4j_conf("OutputLayer", {"layerName": "out", "nin": 6, "nout": 5, "hasBias": True, "activationFn": act("Softmax"),
                                            "lossFn": {"@class": "org.nd4j.linalg.lossfunctions.impl.LossMCXENT"},
                                            "iupdater": upd, "weightInitFn": init})),
    }
    inputs = {"conv_a": ["input"], "bn_a": ["conv_a"], "conv_b": ["bn_a"], "add_1": ["conv_b", "bn_a"], "act_1": ["add_1"],
              "conv_c": ["input"], "concat_1": ["act_1", "conv_c"], "gap": ["concat_1"], "out": ["gap"]}
    config = {"vertices": vertices, "vertexInputs": inputs, "networkInputs": ["input"], "networkOutputs": ["out"],
              "networkInputTypes": [{"@class": "org.deeplearning4j.nn.conf.inputs.InputType$InputTypeConvolutional",
                                     "height": H, "width": W, "channels": C, "format": "NCHW"}],
              "backpropType": "Standard", "tbpttFwdLength": 20, "tbpttBackLength": 20, "iterationCount": 0, "epochCount": 0,
              "trainingWorkspaceMode": "ENABLED", "inferenceWorkspaceMode": "ENABLED", "cacheMode": "NONE", "dataType": "FLOAT",
              "validateOutputLayerConfig": True}
    with open(os.path.join(HERE, "dl4j_residual_concat.json"), "w") as f:
        json.dump(config, f, indent=1)
    # DL4J's order (ComputationGraph.calculateIndices): inputs, then vertices in file order; a FIFO
    # of ready vertices, each one's readers in ascending index (HashSet order for indices < 16).
    names = ["input"] + list(vertices)
    idx = {n: i for i, n in enumerate(names)}
    waiting = {idx[v]: {idx[i] for i in ins} for v, ins in inputs.items()}
    readers = {i: sorted(v for v, ins in waiting.items() if i in ins) for i in range(len(names))}
    ready, order = [0], []
    while ready:
        n = ready.pop(0)
        order.append(names[n])
        for r in readers[n]:
            waiting[r].discard(n)
            if not waiting[r]:
                ready.append(r)
    assert order.index("conv_c") < order.index("bn_a"), order
    # Per layer, DL4J's parameter views: convolution b then W (out, in, kh, kw, 'c' order); batch
    # norm gamma, beta, mean, var; dense W (nIn x nOut, 'f' order: PyTorch's [out, in] row-major) then b.
    per_layer = {
        "conv_a": [p["conv_a_b"], p["conv_a_w"]], "conv_c": [p["conv_c_b"], p["conv_c_w"]],
        "bn_a": [p["bn_gamma"], p["bn_beta"], p["bn_mean"], p["bn_var"]],
        "conv_b": [p["conv_b_b"], p["conv_b_w"]], "out": [p["dense_w"], p["dense_b"]],
    }
    flat = np.concatenate([np.asarray(a, dtype=np.float32).ravel() for n in order for a in per_layer.get(n, [])])
    with open(os.path.join(HERE, "dl4j_residual_concat.coefficients.json"), "w") as f:
        json.dump({"order": order, "coefficients": flat.tolist()}, f)
    x = arr(N, C, H, W, scale=1.0)
    write_expected("dl4j_residual_concat", x, reference(x, p, 1e-5))


def write_keras_separable():
    t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))
    dw1 = arr(3, 3, C, 2)          # Keras depthwise kernel [kh, kw, in, multiplier]
    b1 = arr(C * 2, scale=0.1)
    dw2 = arr(3, 3, C * 2, 2)
    pw2 = arr(1, 1, C * 4, 4)      # pointwise [1, 1, in * multiplier, filters]
    b2 = arr(4, scale=0.1)
    dense_w, dense_b = arr(4, 5), arr(5, scale=0.1)  # Keras [in, out]
    # PyTorch: a depthwise kernel is a grouped Conv2d weight [in * multiplier, 1, kh, kw] whose
    # output channel c * multiplier + m is Keras's kernel [:, :, c, m].
    to_torch = lambda k: np.transpose(k, (2, 3, 0, 1)).reshape(k.shape[2] * k.shape[3], 1, k.shape[0], k.shape[1])
    x = arr(N, C, H, W, scale=1.0)
    y = F.relu(F.conv2d(t(x), t(to_torch(dw1)), t(b1), padding=1, groups=C))
    y = F.conv2d(y, t(to_torch(dw2)), None, groups=C * 2)
    y = torch.tanh(F.conv2d(y, t(np.transpose(pw2, (3, 2, 0, 1))), t(b2)))
    y = F.softmax(y.mean(dim=(2, 3)) @ t(dense_w) + t(dense_b), dim=1).numpy()
    layers = [
        {"class_name": "DepthwiseConv2D", "config": {"name": "dw", "batch_input_shape": [None, H, W, C], "kernel_size": [3, 3],
                                                     "strides": [1, 1], "padding": "same", "depth_multiplier": 2,
                                                     "data_format": "channels_last", "dilation_rate": [1, 1],
                                                     "activation": "relu", "use_bias": True}},
        {"class_name": "SeparableConv2D", "config": {"name": "sep", "filters": 4, "kernel_size": [3, 3], "strides": [1, 1],
                                                     "padding": "valid", "depth_multiplier": 2, "data_format": "channels_last",
                                                     "dilation_rate": [1, 1], "activation": "tanh", "use_bias": True}},
        {"class_name": "GlobalAveragePooling2D", "config": {"name": "gap", "data_format": "channels_last"}},
        {"class_name": "Dense", "config": {"name": "out", "units": 5, "activation": "softmax", "use_bias": True}},
    ]
    model = {"class_name": "Sequential", "config": {"name": "separable", "layers": layers}, "keras_version": "2.4.0"}
    weights = {"dw": [("depthwise_kernel:0", dw1), ("bias:0", b1)],
               "sep": [("depthwise_kernel:0", dw2), ("pointwise_kernel:0", pw2), ("bias:0", b2)],
               "out": [("kernel:0", dense_w), ("bias:0", dense_b)]}
    write_keras2_h5("keras2_depthwise_separable.h5", model, [l["config"]["name"] for l in layers], weights)
    write_expected("keras2_depthwise_separable", x, y)


def write_keras_transposed():
    t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))
    h, w, c = 5, 6, 2
    k1, b1 = arr(3, 3, 3, c), arr(3, scale=0.1)      # Keras [kh, kw, out, in]
    k2, b2 = arr(4, 3, 2, 3), arr(2, scale=0.1)
    dense_w, dense_b = arr(2, 4), arr(4, scale=0.1)
    to_torch = lambda k: np.transpose(k, (3, 2, 0, 1))  # PyTorch ConvTranspose2d [in, out, kh, kw]
    x = arr(N, c, h, w, scale=1.0)
    y = F.relu(F.conv_transpose2d(t(x), t(to_torch(k1)), t(b1), stride=2))
    # "same": the full output (in - 1) * s + k cropped by (k - s) / 2 on each side (even here).
    y = torch.tanh(F.conv_transpose2d(y, t(to_torch(k2)), t(b2), stride=(2, 1), padding=(1, 1)))
    y = F.softmax(y.mean(dim=(2, 3)) @ t(dense_w) + t(dense_b), dim=1).numpy()
    layers = [
        {"class_name": "Conv2DTranspose", "config": {"name": "up1", "batch_input_shape": [None, h, w, c], "filters": 3,
                                                     "kernel_size": [3, 3], "strides": [2, 2], "padding": "valid",
                                                     "data_format": "channels_last", "dilation_rate": [1, 1],
                                                     "output_padding": None, "activation": "relu", "use_bias": True}},
        {"class_name": "Conv2DTranspose", "config": {"name": "up2", "filters": 2, "kernel_size": [4, 3], "strides": [2, 1],
                                                     "padding": "same", "data_format": "channels_last", "dilation_rate": [1, 1],
                                                     "output_padding": None, "activation": "tanh", "use_bias": True}},
        {"class_name": "GlobalAveragePooling2D", "config": {"name": "gap", "data_format": "channels_last"}},
        {"class_name": "Dense", "config": {"name": "out", "units": 4, "activation": "softmax", "use_bias": True}},
    ]
    model = {"class_name": "Sequential", "config": {"name": "transposed", "layers": layers}, "keras_version": "2.4.0"}
    weights = {"up1": [("kernel:0", k1), ("bias:0", b1)], "up2": [("kernel:0", k2), ("bias:0", b2)],
               "out": [("kernel:0", dense_w), ("bias:0", dense_b)]}
    write_keras2_h5("keras2_conv_transpose.h5", model, [l["config"]["name"] for l in layers], weights)
    with open(os.path.join(HERE, "keras2_conv_transpose.expected.json"), "w") as f:
        json.dump({"shape": [c, h, w], "inputs": x.reshape(N, -1).tolist(), "outputs": y.tolist()}, f)


def write_keras_two_inputs_two_outputs():
    """A functional model with an image input and a flat one, and two outputs: a softmax over
    [global-average-pooled conv(image) | dense(meta)], and a sigmoid head on dense(meta)."""
    c, h, w, f = 2, 5, 5, 4
    conv_w, conv_b = arr(3, c, 3, 3), arr(3, scale=0.1)
    meta_w, meta_b = arr(6, f), arr(6, scale=0.1)
    main_w, main_b = arr(4, 3 + 6), arr(4, scale=0.1)
    aux_w, aux_b = arr(2, 6), arr(2, scale=0.1)
    layers = [
        keras_layer("InputLayer", "image", {"batch_input_shape": [None, h, w, c], "sparse": False}, []),
        keras_layer("InputLayer", "meta", {"batch_input_shape": [None, f], "sparse": False}, []),
        keras_layer("Conv2D", "conv", {"filters": 3, "kernel_size": [3, 3], "strides": [1, 1], "padding": "valid",
                                       "data_format": "channels_last", "dilation_rate": [1, 1], "activation": "relu",
                                       "use_bias": True}, ["image"]),
        keras_layer("GlobalAveragePooling2D", "gap", {"data_format": "channels_last"}, ["conv"]),
        keras_layer("Dense", "meta_dense", {"units": 6, "activation": "tanh", "use_bias": True}, ["meta"]),
        keras_layer("Concatenate", "both", {"axis": -1}, ["gap", "meta_dense"]),
        keras_layer("Dense", "main", {"units": 4, "activation": "softmax", "use_bias": True}, ["both"]),
        keras_layer("Dense", "aux", {"units": 2, "activation": "sigmoid", "use_bias": True}, ["meta_dense"]),
    ]
    model = {"class_name": "Functional", "config": {"name": "two_inputs_two_outputs", "layers": layers,
                                                     "input_layers": [["image", 0, 0], ["meta", 0, 0]],
                                                     "output_layers": [["main", 0, 0], ["aux", 0, 0]]},
             "keras_version": "2.4.0", "backend": "tensorflow"}
    hwio = lambda a: np.transpose(a, (2, 3, 1, 0))
    weights = {"conv": [("kernel:0", hwio(conv_w)), ("bias:0", conv_b)],
               "meta_dense": [("kernel:0", meta_w.T), ("bias:0", meta_b)],
               "main": [("kernel:0", main_w.T), ("bias:0", main_b)],
               "aux": [("kernel:0", aux_w.T), ("bias:0", aux_b)]}
    write_keras2_h5("keras2_two_inputs_two_outputs.h5", model, [l["name"] for l in layers], weights)
    img, meta = arr(N, c, h, w, scale=1.0), arr(N, f, scale=1.0)
    t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))
    g = F.relu(F.conv2d(t(img), t(conv_w), t(conv_b))).mean(dim=(2, 3))
    m = torch.tanh(t(meta) @ t(meta_w).T + t(meta_b))
    main = F.softmax(torch.cat([g, m], dim=1) @ t(main_w).T + t(main_b), dim=1)
    aux = torch.sigmoid(m @ t(aux_w).T + t(aux_b))
    # Thresher's sample row: the inputs side by side (the image in C x H x W order, then meta);
    # its outputs side by side in output_layers order.
    rows = np.concatenate([img.reshape(N, -1), meta], axis=1)
    with open(os.path.join(HERE, "keras2_two_inputs_two_outputs.expected.json"), "w") as fh:
        json.dump({"inputs": rows.tolist(), "outputs": torch.cat([main, aux], dim=1).numpy().tolist()}, fh)


def write_keras_reshape_permute():
    """A Keras 2 Sequential model: Dense -> Reshape (3, 4, 2) -> Conv2D -> Permute (2, 1, 3) ->
    Conv2D 1x1 -> Permute (3, 1, 2) -> Flatten -> Dense. Every permuted axis is longer than 1, so a
    wrong axis moves values. PyTorch follows Keras's channels-last tensors step by step."""
    f = 5
    d_w, d_b = arr(24, f), arr(24, scale=0.1)
    c1_w, c1_b = arr(3, 2, 2, 2), arr(3, scale=0.1)   # out, in, kh, kw
    c2_w, c2_b = arr(2, 3, 1, 1), arr(2, scale=0.1)
    o_w, o_b = arr(3, 12), arr(3, scale=0.1)
    conv = lambda name, filters, k, act: {"class_name": "Conv2D", "config": {
        "name": name, "filters": filters, "kernel_size": [k, k], "strides": [1, 1], "padding": "valid",
        "data_format": "channels_last", "dilation_rate": [1, 1], "activation": act, "use_bias": True}}
    layers = [
        {"class_name": "Dense", "config": {"name": "d", "units": 24, "activation": "tanh", "use_bias": True,
                                           "batch_input_shape": [None, f]}},
        {"class_name": "Reshape", "config": {"name": "r", "target_shape": [3, 4, 2]}},
        conv("c1", 3, 2, "relu"),
        {"class_name": "Permute", "config": {"name": "p1", "dims": [2, 1, 3]}},
        conv("c2", 2, 1, "tanh"),
        {"class_name": "Permute", "config": {"name": "p2", "dims": [3, 1, 2]}},
        {"class_name": "Flatten", "config": {"name": "flat", "data_format": "channels_last"}},
        {"class_name": "Dense", "config": {"name": "out", "units": 3, "activation": "softmax", "use_bias": True}},
    ]
    model = {"class_name": "Sequential", "config": {"name": "reshape_permute", "layers": layers}, "keras_version": "2.4.0"}
    hwio = lambda a: np.transpose(a, (2, 3, 1, 0))
    weights = {"d": [("kernel:0", d_w.T), ("bias:0", d_b)], "c1": [("kernel:0", hwio(c1_w)), ("bias:0", c1_b)],
               "c2": [("kernel:0", hwio(c2_w)), ("bias:0", c2_b)], "out": [("kernel:0", o_w.T), ("bias:0", o_b)]}
    write_keras2_h5("keras2_reshape_permute.h5", model, [l["config"]["name"] for l in layers], weights)
    x = arr(N, f, scale=1.0)
    t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))
    nchw = lambda a: a.permute(0, 3, 1, 2)
    nhwc = lambda a: a.permute(0, 2, 3, 1)
    h = torch.tanh(t(x) @ t(d_w).T + t(d_b)).reshape(N, 3, 4, 2)             # N, H, W, C (Keras)
    h = nhwc(F.relu(F.conv2d(nchw(h), t(c1_w), t(c1_b))))                     # N, 2, 3, 3
    h = h.permute(0, 2, 1, 3)                                                 # Permute (2, 1, 3): N, 3, 2, 3
    h = nhwc(torch.tanh(F.conv2d(nchw(h), t(c2_w), t(c2_b))))                # N, 3, 2, 2
    h = h.permute(0, 3, 1, 2)                                                 # Permute (3, 1, 2): N, 2, 3, 2
    y = F.softmax(h.reshape(N, -1) @ t(o_w).T + t(o_b), dim=1)
    with open(os.path.join(HERE, "keras2_reshape_permute.expected.json"), "w") as fh:
        json.dump({"inputs": x.tolist(), "outputs": y.numpy().tolist()}, fh)


write_keras()
write_dl4j()
write_keras_separable()
write_keras_transposed()
write_keras_two_inputs_two_outputs()
write_keras_reshape_permute()
