#!/usr/bin/python3
"""Checks a Thresher Keras export of a sequence model against the Keras file it was imported from,
reading both with h5py alone (Debian's python3-h5py), not with Thresher's reader:

  check_sequence_export.py ORIGINAL EXPORTED

ORIGINAL and EXPORTED are each a Keras 2 .h5 (model_config, model_weights/<layer>/weight_names)
or a Keras 3 .keras (config.json, model.weights.h5 with layers/<class_n>/vars, a recurrent
layer's variables in cell/vars, a Bidirectional's in forward_layer/cell and backward_layer/cell).
Every weighted layer of the original must be in the export under its name, with the same Keras
class (TimeDistributed(Dense) may come back as a Dense, which Keras applies at every step too),
the same return_sequences / merge_mode / reset_after, and every array equal bit for bit in
Keras's layout, per direction: kernel, recurrent_kernel, bias, embeddings. A GRU reset_after
bias [2, 3H] is compared as what it computes: the z and r rows summed, each candidate bias
apart. Prints "ok" and exits 0, or names the first difference and exits 1.
"""
import io
import json
import sys
import zipfile

import h5py
import numpy as np

RNN = ("LSTM", "GRU", "SimpleRNN", "CuDNNLSTM", "CuDNNGRU")


def snake_case(name):
    out = ""
    for k, c in enumerate(name):
        if c.isupper() and k > 0:
            prev = name[k - 1]
            nxt = name[k + 1] if k + 1 < len(name) else ""
            if prev.islower() or (nxt.islower() and prev != "_"):
                out += "_"
        out += c.lower()
    return out


def layers_of(config):
    cfg = config["config"]
    return cfg["layers"] if isinstance(cfg, dict) else cfg


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def leaf_names(layer):
    """Keras's variable order per class (a .keras file numbers them so)."""
    cls = layer["class_name"]
    if cls == "Embedding":
        return ["embeddings"]
    if cls in RNN or cls == "Bidirectional":
        return ["kernel", "recurrent_kernel", "bias"]
    return ["kernel", "bias"]


def read_h5(path):
    with h5py.File(path, "r") as f:
        config = json.loads(text(f.attrs["model_config"]))
        weights = {}
        g = f["model_weights"]
        for name in [text(n) for n in g.attrs["layer_names"]]:
            arrays = []
            for wn in [text(n) for n in g[name].attrs["weight_names"]]:
                parts = wn.split(":")[0].split("/")
                direction = "backward" if any(p.startswith("backward_") for p in parts) else "forward"
                arrays.append((direction, parts[-1], np.array(g[name][wn])))
            weights[name] = arrays
    return config, weights


def read_keras(path):
    with zipfile.ZipFile(path) as z:
        config = json.loads(z.read("config.json"))
        h5 = io.BytesIO(z.read("model.weights.h5"))
    weights = {}
    with h5py.File(h5, "r") as f:
        seen = {}
        for layer in layers_of(config):
            cls = layer["class_name"]
            base = snake_case(cls)
            n = seen.get(base, -1) + 1
            seen[base] = n
            key = "layers/" + (base if n == 0 else "%s_%d" % (base, n))
            if cls == "InputLayer":
                continue
            groups = [("forward", key + "/vars")]
            if cls in RNN:
                groups = [("forward", key + "/cell/vars")]
            elif cls == "Bidirectional":
                groups = [("forward", key + "/forward_layer/cell/vars"), ("backward", key + "/backward_layer/cell/vars")]
            elif cls == "TimeDistributed":
                groups = [("forward", key + "/layer/vars")]
            arrays = []
            for direction, group in groups:
                if group not in f:
                    continue
                for i, leaf in enumerate(leaf_names(layer)):
                    if str(i) in f[group]:
                        arrays.append((direction, leaf, np.array(f[group][str(i)])))
            weights[layer["config"]["name"]] = arrays
    return config, weights


def read(path):
    return read_keras(path) if path.endswith(".keras") else read_h5(path)


def canonical(layer, arrays):
    out = {}
    wrapped = layer["config"]["layer"] if layer["class_name"] == "Bidirectional" else layer
    inner = wrapped["config"]
    for direction, leaf, a in arrays:
        if leaf == "bias" and wrapped["class_name"].startswith("CuDNN"):
            a = a.reshape(2, -1)  # cuDNN's input biases, then its recurrent ones
            if wrapped["class_name"] == "CuDNNLSTM":
                a = a[0] + a[1]  # both added to every gate
        if leaf == "bias" and a.ndim == 2:  # GRU reset_after: [input row; recurrent row]
            h = a.shape[1] // 3
            a = np.concatenate([a[0, :2 * h] + a[1, :2 * h], a[0, 2 * h:], a[1, 2 * h:]])
        out[(direction, leaf)] = a
    return out, inner


def fail(text_):
    print(text_)
    sys.exit(1)


def main():
    original, exported = sys.argv[1], sys.argv[2]
    cfg_a, w_a = read(original)
    cfg_b, w_b = read(exported)
    by_name = {l["config"]["name"]: l for l in layers_of(cfg_b)}
    checked = 0
    for layer in layers_of(cfg_a):
        name = layer["config"]["name"]
        if not w_a.get(name):
            continue
        if name not in by_name:
            fail("%s: layer %s is not in the export (it has %s)" % (exported, name, sorted(by_name)))
        other = by_name[name]
        want_cls = layer["class_name"]
        if want_cls == "TimeDistributed":
            want_cls = layer["config"]["layer"]["class_name"]
        want_cls = {"CuDNNLSTM": "LSTM", "CuDNNGRU": "GRU"}.get(want_cls, want_cls)  # the same cells
        if other["class_name"] not in (want_cls, layer["class_name"]):
            fail("%s: layer %s is %s, the original %s" % (exported, name, other["class_name"], want_cls))
        a, inner_a = canonical(layer, w_a[name])
        b, inner_b = canonical(other, w_b.get(name, []))
        if layer["class_name"] == "Bidirectional" and layer["config"].get("merge_mode") != other["config"].get("merge_mode"):
            fail("%s: layer %s merge_mode %s, the original %s" % (exported, name, other["config"].get("merge_mode"), layer["config"].get("merge_mode")))
        for key in ("return_sequences", "reset_after", "units", "padding", "dilation_rate", "input_dim", "output_dim"):
            if key in inner_a and inner_a.get(key) != inner_b.get(key) and not (key == "reset_after" and not inner_a.get(key) and not inner_b.get(key)):
                fail("%s: layer %s %s %s, the original %s" % (exported, name, key, inner_b.get(key), inner_a.get(key)))
        if sorted(a) != sorted(b):
            fail("%s: layer %s holds %s, the original %s" % (exported, name, sorted(b), sorted(a)))
        for key in a:
            if a[key].shape != b[key].shape or not np.array_equal(a[key], b[key]):
                fail("%s: layer %s %s %s differs from the original's (shapes %s, %s)" % (exported, name, key[0], key[1], b[key].shape, a[key].shape))
            checked += 1
    if checked == 0:
        fail("%s: no weights compared" % original)
    print("ok: %d arrays" % checked)


if __name__ == "__main__":
    main()
