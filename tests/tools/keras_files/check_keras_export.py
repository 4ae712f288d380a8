#!/usr/bin/python3
"""An independent reader of Thresher's Keras exports, with Debian's python3-h5py and numpy.

    check_keras_export.py EXPORTED_FILE EXPECT_JSON

EXPECT_JSON (written by tests/engine/export/test_keras_export.cpp) describes the Thresher model
the file was exported from, in Thresher's own terms: "format" ("keras-h5" or "keras"), the Keras
layer classes expected in order ("keras_classes", the InputLayer not counted), optionally their
names ("keras_names"), what each reads ("keras_inbound": lists of layer names, for a graph; a
shared layer's every call in "keras_calls": {"layer": [["input", "other@1"], ...]}, node k as @k) and
"class_names", whether the model is a graph ("functional"), and per Thresher layer with
parameters its "type", input shape "in" [c, h, w], "units", "kernel", "depth_multiplier",
"prelu_shared" and its parameter blocks as Thresher lays them out ("weight", "bias", "gamma",
"beta", "running_mean", "running_var", "alpha", "depthwise"). The Keras layouts are derived here
with numpy, not taken from the exporter: Dense kernel [in, out] (after a Flatten of an image,
rows in h, w, c order), Conv2D kernel [kh, kw, in, out], DepthwiseConv2D depthwise_kernel
[kh, kw, in, multiplier], SeparableConv2D also pointwise_kernel [1, 1, in * multiplier, filters],
Conv2DTranspose kernel [kh, kw, filters, in], PReLU alpha [h, w, c] on images. Every array must
be bit-identical.

A graph is a Functional model: Keras 2's inbound_nodes [[["name", 0, 0, {}], ...]] and
input_layers / output_layers [["name", 0, 0]]; Keras 3's [{"args": [...], "kwargs": {}}] with each
input a serialised KerasTensor ({"class_name": "__keras_tensor__", "config": {"shape", "dtype",
"keras_history": ["name", 0, 0]}}, a merge layer's inputs in one list argument); the InputLayer
is then in model.layers (its weight group in the .h5, layers/input_layer/vars in the .keras).
Several inputs ("input_names", in order) are that many InputLayers first, each in input_layers;
several outputs ("output_names", main first) are output_layers in that order, and the loss
(training_config's, compile_config's) a dict with one entry per output name. Keras 3 writes one
input or output unnested, ["name", 0, 0].

Prints one line per finding and a summary; exits 1 on any finding.
"""
import io
import json
import re
import sys
import zipfile

import h5py
import numpy as np

problems = []


def problem(text):
    problems.append(text)
    print("problem: " + text)


def text(value):
    """An h5py attribute holding text (numpy bytes, or str)."""
    if isinstance(value, bytes):
        return value.decode("utf8")
    if isinstance(value, np.bytes_):
        return bytes(value).decode("utf8")
    return str(value)


def text_list(attrs, name):
    """Keras's list attribute, whole or split into name0, name1, ..."""
    if name in attrs:
        value = attrs[name]
        return [text(v) for v in value] if value.size else []
    out, chunk = [], 0
    while f"{name}{chunk}" in attrs:
        out += [text(v) for v in attrs[f"{name}{chunk}"]]
        chunk += 1
    if not chunk:
        problem(f"attribute {name} is missing")
    return out


def snake_case(name):
    """Keras's naming.to_snake_case."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    name = re.sub("([a-z])([A-Z])", r"\1_\2", name)
    return name.lower()


VARIABLES = {
    "Dense": ["kernel", "bias"],
    "Conv2D": ["kernel", "bias"],
    "BatchNormalization": ["gamma", "beta", "moving_mean", "moving_variance"],
    "PReLU": ["alpha"],
    "DepthwiseConv2D": ["depthwise_kernel", "bias"],
    "SeparableConv2D": ["depthwise_kernel", "pointwise_kernel", "bias"],
    "Conv2DTranspose": ["kernel", "bias"],
}
MERGES = ("Add", "Subtract", "Multiply", "Average", "Maximum", "Concatenate")


def expected_arrays(layer, after_flatten, image):
    """Thresher's blocks in Keras's layouts, derived with numpy."""
    p = {k: np.asarray(v, dtype=np.float32) for k, v in layer["params"].items()}
    c, h, w = layer["in"]
    kind = layer["type"]
    kh, kw = layer["kernel"]
    if kind in ("dense", "output"):
        units = layer["units"]
        kernel = p["weight"].reshape(c * h * w, units)
        if after_flatten:
            kernel = kernel.reshape(c, h, w, units).transpose(1, 2, 0, 3).reshape(c * h * w, units)
        return [kernel, p["bias"]]
    if kind == "convolution":
        kernel = p["weight"].reshape(layer["units"], c, kh, kw).transpose(2, 3, 1, 0)
        return [kernel, p["bias"]]
    if kind in ("depthwise_convolution", "separable_convolution"):
        mult = layer["depth_multiplier"]
        # Thresher: output channel c * mult + m of input channel c, [in * mult, 1, kh, kw].
        depthwise = p["depthwise" if kind == "separable_convolution" else "weight"]
        depthwise = depthwise.reshape(c, mult, kh, kw).transpose(2, 3, 0, 1)
        if kind == "depthwise_convolution":
            return [depthwise, p["bias"]]
        pointwise = p["weight"].reshape(layer["units"], c * mult).T.reshape(1, 1, c * mult, layer["units"])
        return [depthwise, pointwise, p["bias"]]
    if kind == "transposed_convolution":
        kernel = p["weight"].reshape(c, layer["units"], kh, kw).transpose(2, 3, 1, 0)
        return [kernel, p["bias"]]
    if kind == "batch_norm":
        return [p["gamma"], p["beta"], p["running_mean"], p["running_var"]]
    if kind == "prelu":
        shared = layer["prelu_shared"]
        ac, ah, aw = (1 if shared[0] else c), (1 if shared[1] else h), (1 if shared[2] else w)
        alpha = p["alpha"].reshape(ac, ah, aw)
        return [alpha.transpose(1, 2, 0)] if image else [alpha.reshape(-1)]
    problem(f"layer type {kind} has parameters this checker does not know")
    return []


CALLS = {}  # layer name -> each call's inputs, "name" (node 0) or "name@k" (node k of a shared layer)


def inbound_names(layer, keras3):
    """The layers a Functional model's layer reads in its first call; every call's inputs go to
    CALLS (a shared layer has an inbound node per call)."""
    nodes = layer.get("inbound_nodes")
    if not isinstance(nodes, list):
        problem(f"{layer.get('name')}: no inbound_nodes list")
        return []
    if not nodes:
        return []
    calls = [call_refs(layer, node, keras3) for node in nodes]
    CALLS[layer.get("name")] = [[name if index == 0 else f"{name}@{index}" for name, index in refs] for refs in calls]
    return [name for name, _ in calls[0]]


def call_refs(layer, node, keras3):
    """One inbound node's inputs as (layer name, node index)."""
    names = []
    if keras3:
        if not isinstance(node, dict) or set(node) != {"args", "kwargs"} or node["kwargs"] != {}:
            problem(f"{layer['name']}: Keras 3 inbound node {node!r} is not {{'args': [...], 'kwargs': {{}}}}")
            return []
        args = node["args"]
        merge = layer["class_name"] in MERGES
        tensors = args[0] if merge and len(args) == 1 and isinstance(args[0], list) else args
        if merge != (tensors is not args):
            problem(f"{layer['name']}: a merge layer's inputs are one list argument, other layers' one tensor each")
        for t in tensors:
            if not isinstance(t, dict) or t.get("class_name") != "__keras_tensor__":
                problem(f"{layer['name']}: argument {t!r} is not a serialised KerasTensor")
                continue
            cfg = t["config"]
            if cfg.get("dtype") != "float32" or not isinstance(cfg.get("shape"), list) or cfg["shape"][:1] != [None]:
                problem(f"{layer['name']}: KerasTensor {cfg!r} lacks a batch shape or dtype float32")
            history = cfg.get("keras_history")
            if not (isinstance(history, list) and len(history) == 3 and isinstance(history[1], int) and history[1] >= 0
                    and history[2] == 0):
                problem(f"{layer['name']}: keras_history {history!r} is not [name, node, 0]")
                continue
            names.append((history[0], history[1]))
    else:
        if not isinstance(node, list):
            problem(f"{layer['name']}: Keras 2 inbound node {node!r} is not a list of calls")
            return []
        for ref in node:
            if not (isinstance(ref, list) and len(ref) == 4 and isinstance(ref[1], int) and ref[1] >= 0 and ref[2] == 0
                    and ref[3] == {}):
                problem(f"{layer['name']}: inbound reference {ref!r} is not [name, node, 0, {{}}]")
                continue
            names.append((ref[0], ref[1]))
    return names


def compare(where, got, want):
    got = np.asarray(got)
    if got.dtype != np.float32:
        problem(f"{where}: dtype {got.dtype}, expected float32")
    if got.shape != want.shape:
        problem(f"{where}: shape {got.shape}, expected {want.shape}")
        return 0
    if not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
        diff = np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))
        problem(f"{where}: values differ (max |diff| {diff:g})")
    return want.size


def check_layers(model_config, keras3, expect, weights_of):
    """Classes, names, the graph, and every array against the Thresher parameters; weights_of(i)
    returns the i-th Keras layer's arrays (the InputLayer not counted) in Keras's order."""
    keras_layers = model_config["config"]["layers"]
    functional = model_config.get("class_name") == "Functional"
    if functional != expect.get("functional", False):
        problem(f"class_name {model_config.get('class_name')}, expected "
                f"{'Functional' if expect.get('functional') else 'Sequential'}")
    classes = [l["class_name"] for l in keras_layers]
    n_inputs = len(expect.get("input_names", [None]))
    if classes[:n_inputs] != ["InputLayer"] * n_inputs:
        problem(f"the first layers are {classes[:n_inputs]}, expected {n_inputs} InputLayer(s)")
    input_names = [l["config"]["name"] for l in keras_layers[:n_inputs]]
    if "input_names" in expect and input_names != expect["input_names"]:
        problem(f"inputs {input_names}, expected {expect['input_names']}")
    input_name = input_names[0]
    ranks = {l["config"]["name"]: len(l["config"].get("batch_shape", l["config"].get("batch_input_shape", [])))
             for l in keras_layers[:n_inputs]}
    # What each layer reads: its inbound node in a graph, the layer before in a Sequential.
    reads = []
    if functional:
        cfg = model_config["config"]
        for l in keras_layers[:n_inputs]:
            if l.get("name") != l["config"]["name"] or l.get("inbound_nodes") != []:
                problem("an InputLayer has no name or has inbound nodes")
        for l in keras_layers:
            if l.get("name") != l["config"]["name"]:
                problem(f"layer name {l.get('name')!r} differs from its config's {l['config']['name']!r}")
        reads = [inbound_names(l, keras3) for l in keras_layers[n_inputs:]]
        outputs = expect.get("output_names", [keras_layers[-1]["name"]])

        def endpoints(names):
            return [names[0], 0, 0] if keras3 and len(names) == 1 else [[n, 0, 0] for n in names]
        want_in = endpoints(input_names)
        want_out = endpoints(outputs)
        if cfg.get("input_layers") != want_in or cfg.get("output_layers") != want_out:
            problem(f"input_layers {cfg.get('input_layers')}, output_layers {cfg.get('output_layers')}: expected "
                    f"{want_in}, {want_out}")
    else:
        previous = input_name
        for l in keras_layers[1:]:
            reads.append([previous])
            previous = l["config"]["name"]
    keras_layers = keras_layers[n_inputs:]
    classes = classes[n_inputs:]
    if classes != expect["keras_classes"]:
        problem(f"layer classes {classes}, expected {expect['keras_classes']}")
    names = [l["config"]["name"] for l in keras_layers]
    if len(set(names + input_names)) != len(names) + n_inputs:
        problem(f"layer names are not unique: {names}")
    if "keras_names" in expect and names != expect["keras_names"]:
        problem(f"layer names {names}, expected {expect['keras_names']}")
    if "keras_inbound" in expect and reads != expect["keras_inbound"]:
        problem(f"inbound layers {reads}, expected {expect['keras_inbound']}")
    # Shared layers: every call of the layers named, each call's inputs ("name@k": node k).
    for name, want in expect.get("keras_calls", {}).items():
        if CALLS.get(name) != want:
            problem(f"{name}: calls {CALLS.get(name)}, expected {want}")
    for name, calls in CALLS.items():
        if len(calls) > 1 and name not in expect.get("keras_calls", {}):
            problem(f"{name}: {len(calls)} inbound nodes, expected one call")
    # Whether each tensor is an image: from a 4-D input until a Flatten or a global pooling.
    image_of = {name: rank == 4 for name, rank in ranks.items()}
    class_of = {name: "InputLayer" for name in input_names}
    position = {}
    for i, l in enumerate(keras_layers):
        sources = [s for s in reads[i] if s in image_of]
        if len(sources) != len(reads[i]) or not sources:
            problem(f"{names[i]} reads {reads[i]}: not all of them come before it")
            image_of[names[i]] = False
        elif l["class_name"] == "Reshape":  # to [h, w, c] or [n]
            image_of[names[i]] = len(l["config"]["target_shape"]) == 3
        elif l["class_name"] == "Permute":
            image_of[names[i]] = True
        else:
            image_of[names[i]] = image_of[sources[0]] and l["class_name"] not in (
                "Flatten", "GlobalAveragePooling2D", "GlobalMaxPooling2D")
        class_of[names[i]] = l["class_name"]
        position[names[i]] = i
    thresher = iter(expect["layers"])
    arrays = values = 0
    for i, layer in enumerate(keras_layers):
        got = weights_of(i)
        want_names = VARIABLES.get(layer["class_name"], [])
        if len(got) != len(want_names):
            problem(f"{names[i]}: {len(got)} weights, expected {len(want_names)} ({want_names})")
            continue
        if not want_names:
            continue
        ours = next(thresher, None)
        if ours is None:
            problem(f"{names[i]}: has weights, but the Thresher model has no more layers with parameters")
            continue
        source = reads[i][0] if reads[i] else None
        after_flatten = class_of.get(source) == "Flatten"
        image = image_of.get(source, False)
        for k, want in enumerate(expected_arrays(ours, after_flatten, image)):
            values += compare(f"{names[i]} {want_names[k]}", got[k], want)
            arrays += 1
    if next(thresher, None) is not None:
        problem("the Thresher model has layers with parameters that the file does not hold")
    return len(keras_layers), arrays, values


def check_loss(loss, expect, where):
    outputs = expect.get("output_names", [])
    if len(outputs) > 1 and (not isinstance(loss, dict) or list(loss) != outputs):
        problem(f"{where}: {loss!r}, expected one loss per output {outputs}")
    if len(outputs) <= 1 and not isinstance(loss, str):
        problem(f"{where}: {loss!r}, expected the name of one loss")


def check_h5(path, expect):
    f = h5py.File(path, "r")
    if not text(f.attrs.get("keras_version", b"")).startswith("2."):
        problem(f"keras_version {f.attrs.get('keras_version')!r}, expected 2.x")
    if text(f.attrs.get("backend", b"")) != "tensorflow":
        problem("backend is not tensorflow")
    config = json.loads(text(f.attrs["model_config"]))
    if config.get("class_name") not in ("Sequential", "Functional"):
        problem(f"model_config class_name {config.get('class_name')}")
    functional = config.get("class_name") == "Functional"
    layers = config["config"]["layers"]
    if "batch_input_shape" not in layers[0]["config"]:
        problem("the InputLayer has no batch_input_shape")
    training = json.loads(text(f.attrs["training_config"]))
    for key in ("loss", "optimizer_config", "loss_weights", "metrics"):
        if key not in training:
            problem(f"training_config has no {key}")
    check_loss(training.get("loss"), expect, "training_config.loss")
    if "class_names" in expect and json.loads(text(f.attrs["class_names"])) != expect["class_names"]:
        problem("class_names differ")
    weights = f["model_weights"]
    for key in ("backend", "keras_version"):
        if key not in weights.attrs:
            problem(f"model_weights has no {key} attribute")
    # model.layers: a Functional model's start with its InputLayer, a Sequential's do not.
    layer_names = text_list(weights.attrs, "layer_names")
    if layer_names != [l["config"]["name"] for l in layers[0 if functional else 1:]]:
        problem(f"layer_names {layer_names} differ from model_config's layers")
    n_inputs = len(expect.get("input_names", [None]))
    if functional:
        for layer in layers[:n_inputs]:
            input_name = layer["config"]["name"]
            if input_name not in weights or text_list(weights[input_name].attrs, "weight_names"):
                problem(f"model_weights/{input_name}: the InputLayer's group is missing or holds weights")

    def weights_of(i):
        layer = layers[i + n_inputs]
        name = layer["config"]["name"]
        group = weights[name]
        names = text_list(group.attrs, "weight_names")
        want = [f"{name}/{v}:0" for v in VARIABLES.get(layer["class_name"], [])]
        if names != want:
            problem(f"{name}: weight_names {names}, expected {want}")
        return [group[n][()] for n in names if n in group]

    return check_layers(config, False, expect, weights_of)


def check_keras(path, expect):
    archive = zipfile.ZipFile(path)
    entries = sorted(archive.namelist())
    if entries != ["config.json", "metadata.json", "model.weights.h5"]:
        problem(f"entries {entries}")
    metadata = json.loads(archive.read("metadata.json"))
    if not str(metadata.get("keras_version", "")).startswith("3."):
        problem(f"metadata keras_version {metadata.get('keras_version')}")
    if not re.fullmatch(r"\d{4}-\d\d-\d\d@\d\d:\d\d:\d\d", metadata.get("date_saved", "")):
        problem(f"metadata date_saved {metadata.get('date_saved')}")
    if "class_names" in expect and metadata.get("class_names") != expect["class_names"]:
        problem("class_names differ")
    config = json.loads(archive.read("config.json"))
    functional = config.get("class_name") == "Functional"
    serialised = (("keras.src.models.functional", "Functional", "Functional") if functional
                  else ("keras", "Sequential", None))
    if (config.get("module"), config.get("class_name"), config.get("registered_name", "missing")) != serialised:
        problem("config.json is not a Keras 3 serialised Sequential or Functional model")
    if "compile_config" not in config or "optimizer" not in config["compile_config"]:
        problem("config.json has no compile_config with an optimizer")
    check_loss(config.get("compile_config", {}).get("loss"), expect, "compile_config.loss")
    layers = config["config"]["layers"]
    for layer in layers:
        if not {"module", "class_name", "config", "registered_name"} <= set(layer):
            problem(f"layer {layer.get('class_name')} lacks Keras 3's serialisation keys")
    if "batch_shape" not in layers[0]["config"]:
        problem("the InputLayer has no batch_shape")
    h5 = h5py.File(io.BytesIO(archive.read("model.weights.h5")), "r")
    if "vars" not in h5:
        problem("model.weights.h5 has no root vars group")
    used = {}
    paths = []
    # saving_lib's container state over model.layers (a Functional model's InputLayer first):
    # snake_case class, numbered per class.
    n_inputs = len(expect.get("input_names", [None]))
    if functional:
        for k in range(n_inputs):
            used["input_layer"] = k
            group = "layers/input_layer" + (f"_{k}" if k else "") + "/vars"
            if group not in h5 or len(h5[group]):
                problem(f"{group} is missing or holds weights")
    for layer in layers[n_inputs:]:
        base = snake_case(layer["class_name"])
        used[base] = used.get(base, -1) + 1
        paths.append("layers/" + (f"{base}_{used[base]}" if used[base] else base) + "/vars")

    def weights_of(i):
        if paths[i] not in h5:
            problem(f"{paths[i]} is missing")
            return []
        group = h5[paths[i]]
        keys = sorted(group.keys(), key=int)
        if keys != [str(k) for k in range(len(keys))]:
            problem(f"{paths[i]}: members {keys}, expected 0, 1, ...")
        return [group[k][()] for k in keys]

    return check_layers(config, True, expect, weights_of)


def main():
    path, expect_path = sys.argv[1], sys.argv[2]
    with open(expect_path) as f:
        expect = json.load(f)
    layers, arrays, values = (check_h5 if expect["format"] == "keras-h5" else check_keras)(path, expect)
    if problems:
        print(f"{path}: {len(problems)} problem(s)")
        return 1
    print(f"ok: {path}: h5py {h5py.__version__}: {layers} layers, {arrays} weight arrays, {values} values bit-identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
