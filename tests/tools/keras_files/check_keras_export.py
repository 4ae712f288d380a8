#!/usr/bin/python3
"""An independent reader of Thresher's Keras exports, with Debian's python3-h5py and numpy.

    check_keras_export.py EXPORTED_FILE EXPECT_JSON

EXPECT_JSON (written by tests/engine/export/test_keras_export.cpp) describes the Thresher model
the file was exported from, in Thresher's own terms: "format" ("keras-h5" or "keras"), the Keras
layer classes expected in order ("keras_classes", the InputLayer not counted), optionally their
names ("keras_names") and "class_names", and per Thresher layer with parameters its "type",
input shape "in" [c, h, w], "units", "kernel", "prelu_shared" and its parameter blocks as
Thresher lays them out ("weight", "bias", "gamma", "beta", "running_mean", "running_var",
"alpha"). The Keras layouts are derived here with numpy, not taken from the exporter:
Dense kernel [in, out] (after a Flatten of an image, rows in h, w, c order), Conv2D kernel
[kh, kw, in, out], PReLU alpha [h, w, c] on images. Every array must be bit-identical.

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
}


def expected_arrays(layer, keras_layers, index, image):
    """Thresher's blocks in Keras's layouts, derived with numpy."""
    p = {k: np.asarray(v, dtype=np.float32) for k, v in layer["params"].items()}
    c, h, w = layer["in"]
    kind = layer["type"]
    if kind in ("dense", "output"):
        units = layer["units"]
        kernel = p["weight"].reshape(c * h * w, units)
        after_flatten = index > 0 and keras_layers[index - 1]["class_name"] == "Flatten"
        if after_flatten:
            kernel = kernel.reshape(c, h, w, units).transpose(1, 2, 0, 3).reshape(c * h * w, units)
        return [kernel, p["bias"]]
    if kind == "convolution":
        kh, kw = layer["kernel"]
        kernel = p["weight"].reshape(layer["units"], c, kh, kw).transpose(2, 3, 1, 0)
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


def check_layers(keras_layers, expect, weights_of):
    """Classes, names, and every array against the Thresher parameters; weights_of(i) returns
    the i-th Keras layer's arrays in Keras's order."""
    classes = [l["class_name"] for l in keras_layers]
    if classes[:1] != ["InputLayer"]:
        problem(f"the first layer is {classes[:1]}, expected InputLayer")
    input_config = keras_layers[0]["config"]
    # Whether each layer reads an image: from a 4-D input until a Flatten or a global pooling.
    image = len(input_config.get("batch_shape", input_config.get("batch_input_shape", []))) == 4
    images = []
    for l in keras_layers[1:]:
        images.append(image)
        if l["class_name"] in ("Flatten", "GlobalAveragePooling2D", "GlobalMaxPooling2D"):
            image = False
    keras_layers = keras_layers[1:]
    classes = classes[1:]
    if classes != expect["keras_classes"]:
        problem(f"layer classes {classes}, expected {expect['keras_classes']}")
    names = [l["config"]["name"] for l in keras_layers]
    if len(set(names)) != len(names):
        problem(f"layer names are not unique: {names}")
    if "keras_names" in expect and names != expect["keras_names"]:
        problem(f"layer names {names}, expected {expect['keras_names']}")
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
        for k, want in enumerate(expected_arrays(ours, keras_layers, i, images[i])):
            values += compare(f"{names[i]} {want_names[k]}", got[k], want)
            arrays += 1
    if next(thresher, None) is not None:
        problem("the Thresher model has layers with parameters that the file does not hold")
    return len(keras_layers), arrays, values


def check_h5(path, expect):
    f = h5py.File(path, "r")
    if not text(f.attrs.get("keras_version", b"")).startswith("2."):
        problem(f"keras_version {f.attrs.get('keras_version')!r}, expected 2.x")
    if text(f.attrs.get("backend", b"")) != "tensorflow":
        problem("backend is not tensorflow")
    config = json.loads(text(f.attrs["model_config"]))
    if config.get("class_name") != "Sequential":
        problem(f"model_config class_name {config.get('class_name')}")
    layers = config["config"]["layers"]
    if "batch_input_shape" not in layers[0]["config"]:
        problem("the InputLayer has no batch_input_shape")
    training = json.loads(text(f.attrs["training_config"]))
    for key in ("loss", "optimizer_config", "loss_weights", "metrics"):
        if key not in training:
            problem(f"training_config has no {key}")
    if "class_names" in expect and json.loads(text(f.attrs["class_names"])) != expect["class_names"]:
        problem("class_names differ")
    weights = f["model_weights"]
    for key in ("backend", "keras_version"):
        if key not in weights.attrs:
            problem(f"model_weights has no {key} attribute")
    layer_names = text_list(weights.attrs, "layer_names")
    if layer_names != [l["config"]["name"] for l in layers[1:]]:
        problem(f"layer_names {layer_names} differ from model_config's layers")

    def weights_of(i):
        layer = layers[i + 1]
        name = layer["config"]["name"]
        group = weights[name]
        names = text_list(group.attrs, "weight_names")
        want = [f"{name}/{v}:0" for v in VARIABLES.get(layer["class_name"], [])]
        if names != want:
            problem(f"{name}: weight_names {names}, expected {want}")
        return [group[n][()] for n in names if n in group]

    return check_layers(layers, expect, weights_of)


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
    if (config.get("module"), config.get("class_name")) != ("keras", "Sequential") or "registered_name" not in config:
        problem("config.json is not a Keras 3 serialised Sequential")
    if "compile_config" not in config or "optimizer" not in config["compile_config"]:
        problem("config.json has no compile_config with an optimizer")
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
    for layer in layers[1:]:  # saving_lib's container state: snake_case class, numbered per class
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

    return check_layers(layers, expect, weights_of)


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
