#!/usr/bin/python3
"""Writes Keras 2 functional models with shared layers and nested models, with known weights, and
their outputs computed independently by PyTorch (float64).

Run once with Debian's python3 (python3-torch, python3-h5py, python3-numpy); the files are
committed and read by tests/engine/config/test_graph_weights.cpp, which imports each with Thresher
and compares its predictions with PyTorch's within 1e-4.

  keras2_siamese_shared.h5      two image inputs through one Conv2D, one BatchNormalization, one
                                GlobalAveragePooling2D and one Dense (each called twice: two
                                inbound nodes, the readers naming node 0 or 1); subtract; Dense.
                                A shared layer's weights are saved once, under its name.
  keras2_nested_models.h5       two image inputs through a nested Sequential "encoder" (Conv2D,
                                MaxPooling2D, Flatten, Dense) called twice, concatenated, then a
                                nested functional model "head" (Dense, Dense). As Keras 2's
                                model.save() writes a model used as a layer: one group
                                model_weights/<model> whose weight_names are <layer>/<var>:0.
  keras3_nested_models.keras    the same model and weights as a Keras 3 .keras archive (the nested
                                models' variables in their own containers of model.weights.h5)
  *.expected.json               inputs (both images side by side, C x H x W each) and PyTorch's
                                outputs
"""
import json
import os

import h5py
import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261128)
N, C, H, W = 4, 3, 6, 6
t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))
hwio = lambda w: np.transpose(w, (2, 3, 1, 0))  # PyTorch [out, in, kh, kw] -> Keras [kh, kw, in, out]


def arr(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def node(*refs):
    """One Keras 2 inbound node: [layer, node_index, tensor_index, kwargs] per input."""
    return [[name, index, 0, {}] for name, index in refs]


def keras_layer(cls, name, config, nodes):
    return {"class_name": cls, "name": name, "config": dict(config, name=name, trainable=True, dtype="float32"),
            "inbound_nodes": nodes}


def image_input(name):
    return keras_layer("InputLayer", name, {"batch_input_shape": [None, H, W, C], "sparse": False}, [])


def conv_config(filters, k, padding, act):
    return {"filters": filters, "kernel_size": [k, k], "strides": [1, 1], "padding": padding, "data_format": "channels_last",
            "dilation_rate": [1, 1], "activation": act, "use_bias": True}


def write_h5(name, model, layer_names, weights):
    """Keras 2's model.save(): model_config, and model_weights/<layer> holding weight_names and the
    arrays under them (a nested model's group holds all its layers' weights)."""
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
            lg.attrs["weight_names"] = np.array([w.encode() for w, _ in ws]) if ws else np.array([], dtype=np.float32)
            for w, v in ws:
                lg.create_dataset(w, data=np.ascontiguousarray(v, dtype=np.float32))


def write_expected(name, a, b, y):
    rows = np.concatenate([a.reshape(N, -1), b.reshape(N, -1)], axis=1)
    with open(os.path.join(HERE, name + ".expected.json"), "w") as fh:
        json.dump({"inputs": rows.tolist(), "outputs": y.tolist()}, fh)


def write_siamese():
    conv_w, conv_b = arr(4, C, 3, 3), arr(4, scale=0.1)
    gamma, beta = 1 + arr(4, scale=0.2), arr(4, scale=0.2)
    mean, var = arr(4, scale=0.3), (0.5 + np.abs(arr(4))).astype(np.float32)
    emb_w, emb_b = arr(5, 4), arr(5, scale=0.1)
    out_w, out_b = arr(3, 5), arr(3, scale=0.1)
    layers = [
        image_input("left"),
        image_input("right"),
        keras_layer("Conv2D", "conv", conv_config(4, 3, "same", "relu"), [node(("left", 0)), node(("right", 0))]),
        keras_layer("BatchNormalization", "bn", {"axis": -1, "momentum": 0.99, "epsilon": 0.001, "center": True, "scale": True},
                    [node(("conv", 0)), node(("conv", 1))]),
        keras_layer("GlobalAveragePooling2D", "gap", {"data_format": "channels_last"}, [node(("bn", 0)), node(("bn", 1))]),
        keras_layer("Dense", "embed", {"units": 5, "activation": "tanh", "use_bias": True}, [node(("gap", 0)), node(("gap", 1))]),
        keras_layer("Subtract", "diff", {}, [node(("embed", 0), ("embed", 1))]),
        keras_layer("Dense", "out", {"units": 3, "activation": "softmax", "use_bias": True}, [node(("diff", 0))]),
    ]
    model = {"class_name": "Model", "config": {"name": "siamese", "layers": layers,
                                                "input_layers": [["left", 0, 0], ["right", 0, 0]],
                                                "output_layers": [["out", 0, 0]]},
             "keras_version": "2.4.0", "backend": "tensorflow"}
    weights = {
        "conv": [("conv/kernel:0", hwio(conv_w)), ("conv/bias:0", conv_b)],
        "bn": [("bn/gamma:0", gamma), ("bn/beta:0", beta), ("bn/moving_mean:0", mean), ("bn/moving_variance:0", var)],
        "embed": [("embed/kernel:0", emb_w.T), ("embed/bias:0", emb_b)],
        "out": [("out/kernel:0", out_w.T), ("out/bias:0", out_b)],
    }
    write_h5("keras2_siamese_shared.h5", model, [l["name"] for l in layers], weights)
    a, b = arr(N, C, H, W, scale=1.0), arr(N, C, H, W, scale=1.0)

    def branch(x):
        h = F.relu(F.conv2d(t(x), t(conv_w), t(conv_b), padding=1))
        h = F.batch_norm(h, t(mean), t(var), t(gamma), t(beta), training=False, eps=1e-3)
        return torch.tanh(h.mean(dim=(2, 3)) @ t(emb_w).T + t(emb_b))

    y = F.softmax((branch(a) - branch(b)) @ t(out_w).T + t(out_b), dim=1)
    write_expected("keras2_siamese_shared", a, b, y.numpy())


def write_nested():
    c_w, c_b = arr(4, C, 3, 3), arr(4, scale=0.1)
    d_w, d_b = arr(6, 4 * 2 * 2), arr(6, scale=0.1)  # after a valid 3x3 (4x4) and 2x2 pooling: 2x2x4
    h1_w, h1_b = arr(5, 12), arr(5, scale=0.1)
    h2_w, h2_b = arr(3, 5), arr(3, scale=0.1)
    encoder = {"class_name": "Sequential", "name": "encoder", "config": {"name": "encoder", "layers": [
        {"class_name": "Conv2D", "config": dict(conv_config(4, 3, "valid", "relu"), name="conv2d",
                                                batch_input_shape=[None, H, W, C])},
        {"class_name": "MaxPooling2D", "config": {"name": "max_pooling2d", "pool_size": [2, 2], "strides": [2, 2],
                                                  "padding": "valid", "data_format": "channels_last"}},
        {"class_name": "Flatten", "config": {"name": "flatten", "data_format": "channels_last"}},
        {"class_name": "Dense", "config": {"name": "dense", "units": 6, "activation": "tanh", "use_bias": True}},
    ]}, "inbound_nodes": [node(("left", 0)), node(("right", 0))]}
    head = {"class_name": "Functional", "name": "head", "config": {"name": "head", "layers": [
        keras_layer("InputLayer", "head_in", {"batch_input_shape": [None, 12], "sparse": False}, []),
        keras_layer("Dense", "h1", {"units": 5, "activation": "relu", "use_bias": True}, [node(("head_in", 0))]),
        keras_layer("Dense", "h2", {"units": 3, "activation": "softmax", "use_bias": True}, [node(("h1", 0))]),
    ], "input_layers": [["head_in", 0, 0]], "output_layers": [["h2", 0, 0]]}, "inbound_nodes": [node(("both", 0))]}
    layers = [
        image_input("left"),
        image_input("right"),
        encoder,
        keras_layer("Concatenate", "both", {"axis": -1}, [node(("encoder", 0), ("encoder", 1))]),
        head,
    ]
    model = {"class_name": "Functional", "config": {"name": "nested", "layers": layers,
                                                     "input_layers": [["left", 0, 0], ["right", 0, 0]],
                                                     "output_layers": [["head", 0, 0]]},
             "keras_version": "2.4.0", "backend": "tensorflow"}
    # The Dense after Flatten reads Keras's (h, w, c) order: its kernel rows in that order.
    d_kernel = d_w.reshape(6, 4, 2, 2).transpose(2, 3, 1, 0).reshape(16, 6)
    weights = {
        "encoder": [("conv2d/kernel:0", hwio(c_w)), ("conv2d/bias:0", c_b), ("dense/kernel:0", d_kernel), ("dense/bias:0", d_b)],
        "head": [("h1/kernel:0", h1_w.T), ("h1/bias:0", h1_b), ("h2/kernel:0", h2_w.T), ("h2/bias:0", h2_b)],
    }
    write_h5("keras2_nested_models.h5", model, [l["name"] for l in layers], weights)
    write_keras3_nested(weights)
    a, b = arr(N, C, H, W, scale=1.0), arr(N, C, H, W, scale=1.0)

    def encode(x):
        h = F.max_pool2d(F.relu(F.conv2d(t(x), t(c_w), t(c_b))), 2)
        return torch.tanh(h.reshape(N, -1) @ t(d_w).T + t(d_b))  # PyTorch flattens (c, h, w): d_w's own order

    both = torch.cat([encode(a), encode(b)], dim=1)
    y = F.softmax(F.relu(both @ t(h1_w).T + t(h1_b)) @ t(h2_w).T + t(h2_b), dim=1)
    write_expected("keras2_nested_models", a, b, y.numpy())


def node3(*refs):
    """One Keras 3 inbound node: the call's arguments, each input a serialised KerasTensor."""
    tensors = [{"class_name": "__keras_tensor__", "config": {"shape": [None], "dtype": "float32", "keras_history": [n, i, 0]}}
               for n, i in refs]
    return {"args": [tensors] if len(tensors) > 1 else tensors, "kwargs": {}}


def layer3(cls, name, config, nodes):
    return {"module": "keras.layers", "class_name": cls, "config": dict(config, name=name, trainable=True, dtype="float32"),
            "registered_name": None, "name": name, "inbound_nodes": nodes}


def write_keras3_nested(weights):
    """keras3_nested_models.keras: the model of keras2_nested_models.h5, with its weights, as
    Keras 3's saving_lib writes it: config.json, and model.weights.h5 holding each layer's
    variables at layers/<class>/vars/<i>, a nested model's layers in its own container,
    layers/<model class>/layers/<class>/vars (classes snake_case, numbered per container)."""
    import zipfile
    inputs = [layer3("InputLayer", n, {"batch_shape": [None, H, W, C], "sparse": False}, []) for n in ("left", "right")]
    encoder = {"module": "keras", "class_name": "Sequential", "registered_name": None, "name": "encoder",
               "config": {"name": "encoder", "layers": [
                   {"module": "keras.layers", "class_name": "InputLayer", "registered_name": None,
                    "config": {"name": "encoder_in", "batch_shape": [None, H, W, C]}},
                   {"module": "keras.layers", "class_name": "Conv2D", "registered_name": None,
                    "config": dict(conv_config(4, 3, "valid", "relu"), name="conv2d")},
                   {"module": "keras.layers", "class_name": "MaxPooling2D", "registered_name": None,
                    "config": {"name": "max_pooling2d", "pool_size": [2, 2], "strides": [2, 2], "padding": "valid",
                               "data_format": "channels_last"}},
                   {"module": "keras.layers", "class_name": "Flatten", "registered_name": None,
                    "config": {"name": "flatten", "data_format": "channels_last"}},
                   {"module": "keras.layers", "class_name": "Dense", "registered_name": None,
                    "config": {"name": "dense", "units": 6, "activation": "tanh", "use_bias": True}}]},
               "inbound_nodes": [node3(("left", 0)), node3(("right", 0))]}
    head = {"module": "keras.src.models.functional", "class_name": "Functional", "registered_name": "Functional", "name": "head",
            "config": {"name": "head", "layers": [
                layer3("InputLayer", "head_in", {"batch_shape": [None, 12], "sparse": False}, []),
                layer3("Dense", "h1", {"units": 5, "activation": "relu", "use_bias": True}, [node3(("head_in", 0))]),
                layer3("Dense", "h2", {"units": 3, "activation": "softmax", "use_bias": True}, [node3(("h1", 0))])],
                "input_layers": ["head_in", 0, 0], "output_layers": ["h2", 0, 0]},
            "inbound_nodes": [node3(("both", 0))]}
    both = layer3("Concatenate", "both", {"axis": -1}, [node3(("encoder", 0), ("encoder", 1))])
    model = {"module": "keras.src.models.functional", "class_name": "Functional", "registered_name": "Functional",
             "config": {"name": "nested", "layers": inputs + [encoder, both, head],
                        "input_layers": [["left", 0, 0], ["right", 0, 0]], "output_layers": ["head", 0, 0]}}
    path = os.path.join(HERE, "keras3_nested_models.keras")
    h5_path = path + ".weights.h5"
    with h5py.File(h5_path, "w") as f:
        for n in ("input_layer", "input_layer_1", "concatenate"):
            f.create_group(f"layers/{n}/vars")
        groups = {"encoder": "layers/sequential/layers/", "head": "layers/functional/layers/"}
        inner = {"conv2d": "conv2d", "dense": "dense", "h1": "dense", "h2": "dense_1"}
        for model_name, ws in weights.items():
            by_layer = {}
            for name, value in ws:
                by_layer.setdefault(name.split("/")[0], []).append(value)
            for layer, values in by_layer.items():
                g = f.create_group(groups[model_name] + inner[layer] + "/vars")
                for i, v in enumerate(values):
                    g.create_dataset(str(i), data=np.ascontiguousarray(v, dtype=np.float32))
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata.json", json.dumps({"keras_version": "3.3.3"}))
        z.writestr("config.json", json.dumps(model))
        z.write(h5_path, "model.weights.h5")
    os.remove(h5_path)


if __name__ == "__main__":
    write_siamese()
    write_nested()
