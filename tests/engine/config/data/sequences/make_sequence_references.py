#!/usr/bin/python3
"""Writes small Keras sequence models with known weights, as Keras saves them, and their outputs
computed independently by PyTorch (float64): nn.LSTM / nn.GRU / nn.RNN / Conv1d fed the Keras
arrays in torch's own layouts (GRU gates r, z, n; [out, in] matrices), packed sequences for the
samples shorter than the model's steps, and a hand-written step for GRU reset_after=False, which
torch lacks.

Run once with Debian's python3 (python3-torch, python3-h5py, python3-numpy); the files are
committed and read by tests/engine/config/test_sequence_import.cpp, which imports each with
Thresher and compares its predictions with these within 1e-4.

  keras2_embedding_lstm.h5       Embedding(mask_zero) -> LSTM -> Dense(softmax); lengths 5, 3, 1, 4
  keras2_bilstm_timedistributed.h5  Bidirectional(LSTM, concat, return_sequences) ->
                                 TimeDistributed(Dense); lengths 5, 2, 4 (per-step outputs, zero
                                 at padded steps; the reverse direction reads within the length)
  keras2_gru_reset_after.h5      GRU(reset_after=True), tf.keras weight names (gru/gru_cell/...)
  keras2_gru_reset_before.h5     GRU(reset_after=False), Keras 2.2 names
  keras2_simple_rnn.h5           SimpleRNN(relu, return_sequences) -> Flatten -> Dense
  keras2_conv1d_causal.h5        Conv1D(causal, dilation 2, relu) -> GlobalMaxPooling1D -> Dense
  keras3_lstm.keras              Keras 3 archive: LSTM -> Dense, variables in layers/lstm/cell/vars
  keras2_cudnn_lstm.h5           Keras 2's CuDNNLSTM (bias [8H]: input biases, then recurrent ones,
                                 which are torch's bias_ih and bias_hh) -> Dense
  keras2_cudnn_gru.h5            Keras 2's CuDNNGRU (reset after the recurrent matmul, bias [6H]) -> Dense
  *.expected.json                inputs as Thresher reads them (per sample: its length, then the
                                 steps x features values) and the outputs
"""
import json
import os
import zipfile

import h5py
import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261127)
T, C = 5, 3
torch.set_default_dtype(torch.float64)
t = lambda a: torch.tensor(np.asarray(a, dtype=np.float64))


def arr(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def layer(cls, name, **config):
    return {"class_name": cls, "config": dict({"name": name, "trainable": True, "dtype": "float32"}, **config)}


def rnn_config(name, units, **extra):
    return dict({"return_sequences": False, "return_state": False, "go_backwards": False, "stateful": False,
                 "unroll": False, "units": units, "activation": "tanh", "recurrent_activation": "sigmoid",
                 "use_bias": True, "kernel_initializer": {"class_name": "VarianceScaling", "config": {
                     "scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": None}},
                 "recurrent_initializer": {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": None}},
                 "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": None,
                 "recurrent_regularizer": None, "bias_regularizer": None, "activity_regularizer": None,
                 "kernel_constraint": None, "recurrent_constraint": None, "bias_constraint": None,
                 "dropout": 0.0, "recurrent_dropout": 0.0, "implementation": 1, "name": name, "trainable": True}, **extra)


def dense(name, units, act):
    return layer("Dense", name, units=units, activation=act, use_bias=True,
                 kernel_initializer={"class_name": "VarianceScaling", "config": {"scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": None}},
                 bias_initializer={"class_name": "Zeros", "config": {}}, kernel_regularizer=None, bias_regularizer=None,
                 activity_regularizer=None, kernel_constraint=None, bias_constraint=None)


def sequential(name, layers):
    return {"class_name": "Sequential", "config": {"name": name, "layers": layers}, "keras_version": "2.2.4", "backend": "tensorflow"}


def write_h5(name, model, weights):
    """Keras 2's model.save(): model_config, model_weights/<layer> with weight_names and arrays."""
    with h5py.File(os.path.join(HERE, name), "w") as f:
        f.attrs["keras_version"] = "2.2.4"
        f.attrs["backend"] = "tensorflow"
        f.attrs["model_config"] = json.dumps(model)
        g = f.create_group("model_weights")
        names = [l["config"]["name"] for l in model["config"]["layers"]]
        g.attrs["layer_names"] = np.array([n.encode() for n in names])
        for n in names:
            lg = g.create_group(n)
            ws = weights.get(n, [])
            lg.attrs["weight_names"] = np.array([w.encode() for w, _ in ws]) if ws else np.array([], dtype=np.float32)
            for w, v in ws:
                lg.create_dataset(w, data=np.ascontiguousarray(v, dtype=np.float32))


def write_expected(name, lengths, x, y):
    """x: [N, T, F] (zeros at padded steps); a sample's row is its length, then the values."""
    rows = [[float(l)] + x[s].reshape(-1).tolist() for s, l in enumerate(lengths)]
    with open(os.path.join(HERE, name + ".expected.json"), "w") as fh:
        json.dump({"inputs": rows, "outputs": np.asarray(y).reshape(len(lengths), -1).tolist()}, fh)


def pad(x, lengths):
    x = np.array(x)
    for s, l in enumerate(lengths):
        x[s, l:] = 0
    return x


def torch_gru_order(a, h):
    """Keras's z, r, h gate blocks (last axis) as torch's r, z, n (first axis after .T)."""
    return np.concatenate([a[..., h:2 * h], a[..., :h], a[..., 2 * h:]], axis=-1)


def run_rnn(mod, x, lengths):
    """torch over packed sequences: every step's output (zeros past the length) and the last state."""
    packed = pack_padded_sequence(t(x), torch.tensor(lengths), batch_first=True, enforce_sorted=False)
    out, h = mod(packed)
    seq, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
    if isinstance(h, tuple):
        h = h[0]
    return seq.detach(), h.detach()


def set_dir(mod, suffix, k, r, b_ih, b_hh):
    getattr(mod, "weight_ih_l0" + suffix).data = t(k).T.contiguous()
    getattr(mod, "weight_hh_l0" + suffix).data = t(r).T.contiguous()
    getattr(mod, "bias_ih_l0" + suffix).data = t(b_ih)
    getattr(mod, "bias_hh_l0" + suffix).data = t(b_hh)


def embedding_lstm():
    V, E, H, K = 7, 4, 6, 3
    lengths = [5, 3, 1, 4]
    ids = pad(rng.integers(1, V, size=(4, T)), lengths)
    emb, k, r, b = arr(V, E), arr(E, 4 * H), arr(H, 4 * H), arr(4 * H, scale=0.2)
    dw, db = arr(H, K), arr(K, scale=0.1)
    model = sequential("sequential_1", [
        layer("Embedding", "embedding_1", batch_input_shape=[None, T], input_dim=V, output_dim=E,
              embeddings_initializer={"class_name": "RandomUniform", "config": {"minval": -0.05, "maxval": 0.05, "seed": None}},
              embeddings_regularizer=None, activity_regularizer=None, embeddings_constraint=None, mask_zero=True, input_length=T),
        {"class_name": "LSTM", "config": rnn_config("lstm_1", H, unit_forget_bias=True)},
        dense("dense_1", K, "softmax")])
    write_h5("keras2_embedding_lstm.h5", model, {
        "embedding_1": [("embedding_1/embeddings:0", emb)],
        "lstm_1": [("lstm_1/kernel:0", k), ("lstm_1/recurrent_kernel:0", r), ("lstm_1/bias:0", b)],
        "dense_1": [("dense_1/kernel:0", dw), ("dense_1/bias:0", db)]})
    x = t(emb)[torch.tensor(ids)].numpy()  # torch's embedding: a row per id
    lstm = torch.nn.LSTM(E, H, batch_first=True)  # torch's gates i, f, g, o: Keras's i, f, c, o
    set_dir(lstm, "", k, r, b, np.zeros(4 * H))
    _, h = run_rnn(lstm, x, lengths)
    y = torch.softmax(h[0] @ t(dw) + t(db), dim=1)
    write_expected("keras2_embedding_lstm", lengths, ids[..., None], y.numpy())
    return k, r, b, dw, db


def bilstm_timedistributed():
    H, K = 4, 2
    lengths = [5, 2, 4]
    x = pad(arr(3, T, C, scale=1.0), lengths)
    fw = (arr(C, 4 * H), arr(H, 4 * H), arr(4 * H, scale=0.2))
    bw = (arr(C, 4 * H), arr(H, 4 * H), arr(4 * H, scale=0.2))
    dw, db = arr(2 * H, K), arr(K, scale=0.1)
    inner = {"class_name": "LSTM", "config": rnn_config("lstm_1", H, return_sequences=True)}
    model = sequential("sequential_2", [
        layer("Bidirectional", "bidirectional_1", batch_input_shape=[None, T, C], layer=inner, merge_mode="concat"),
        layer("TimeDistributed", "time_distributed_1", layer=dense("dense_2", K, "linear"))])
    wn = lambda d, v: "bidirectional_1/%s_lstm_1/%s:0" % (d, v)
    write_h5("keras2_bilstm_timedistributed.h5", model, {
        "bidirectional_1": [(wn("forward", "kernel"), fw[0]), (wn("forward", "recurrent_kernel"), fw[1]), (wn("forward", "bias"), fw[2]),
                            (wn("backward", "kernel"), bw[0]), (wn("backward", "recurrent_kernel"), bw[1]), (wn("backward", "bias"), bw[2])],
        "time_distributed_1": [("time_distributed_1/kernel:0", dw), ("time_distributed_1/bias:0", db)]})
    lstm = torch.nn.LSTM(C, H, batch_first=True, bidirectional=True)
    set_dir(lstm, "", *fw, np.zeros(4 * H))
    set_dir(lstm, "_reverse", *bw, np.zeros(4 * H))
    seq, _ = run_rnn(lstm, x, lengths)
    y = (seq @ t(dw) + t(db)).numpy()
    for s, l in enumerate(lengths):
        y[s, l:] = 0  # padded steps carry no output
    write_expected("keras2_bilstm_timedistributed", lengths, x, y)


def gru(reset_after):
    H, K = 5, 2
    lengths = [5, 4, 2]
    x = pad(arr(3, T, C, scale=1.0), lengths)
    k, r = arr(C, 3 * H), arr(H, 3 * H)
    b = arr(2, 3 * H, scale=0.2) if reset_after else arr(3 * H, scale=0.2)
    dw, db = arr(H, K), arr(K, scale=0.1)
    name = "keras2_gru_reset_after" if reset_after else "keras2_gru_reset_before"
    model = sequential("sequential_3", [
        {"class_name": "GRU", "config": dict(rnn_config("gru", H, reset_after=reset_after), batch_input_shape=[None, T, C])},
        dense("dense", K, "linear")])
    # tf.keras names the cell's weights under it; Keras 2.2 does not.
    cell = "gru/gru_cell/" if reset_after else "gru/"
    write_h5(name + ".h5", model, {"gru": [(cell + "kernel:0", k), (cell + "recurrent_kernel:0", r), (cell + "bias:0", b)],
                                   "dense": [("dense/kernel:0", dw), ("dense/bias:0", db)]})
    if reset_after:
        mod = torch.nn.GRU(C, H, batch_first=True)
        set_dir(mod, "", torch_gru_order(k, H), torch_gru_order(r, H), torch_gru_order(b[0], H), torch_gru_order(b[1], H))
        _, h = run_rnn(mod, x, lengths)
        last = h[0]
    else:
        # Keras's original GRU: the reset gate scales the state before the recurrent matmul.
        K_, R_, B_ = t(k), t(r), t(b)
        last = torch.zeros(3, H)
        for s, l in enumerate(lengths):
            hs = torch.zeros(H)
            for step in range(l):
                xs = t(x[s, step])
                z = torch.sigmoid(xs @ K_[:, :H] + hs @ R_[:, :H] + B_[:H])
                rr = torch.sigmoid(xs @ K_[:, H:2 * H] + hs @ R_[:, H:2 * H] + B_[H:2 * H])
                cand = torch.tanh(xs @ K_[:, 2 * H:] + (rr * hs) @ R_[:, 2 * H:] + B_[2 * H:])
                hs = z * hs + (1 - z) * cand
            last[s] = hs
    y = last @ t(dw) + t(db)
    write_expected(name, lengths, x, y.numpy())


def simple_rnn():
    H, K = 4, 3
    lengths = [5, 5]
    x = arr(2, T, C, scale=1.0)
    k, r, b = arr(C, H), arr(H, H), arr(H, scale=0.2)
    dw, db = arr(T * H, K), arr(K, scale=0.1)
    model = sequential("sequential_4", [
        {"class_name": "SimpleRNN", "config": dict(rnn_config("simple_rnn_1", H, return_sequences=True, activation="relu"),
                                                   batch_input_shape=[None, T, C])},
        layer("Flatten", "flatten_1", data_format="channels_last"),
        dense("dense_4", K, "softmax")])
    write_h5("keras2_simple_rnn.h5", model, {
        "simple_rnn_1": [("simple_rnn_1/kernel:0", k), ("simple_rnn_1/recurrent_kernel:0", r), ("simple_rnn_1/bias:0", b)],
        "dense_4": [("dense_4/kernel:0", dw), ("dense_4/bias:0", db)]})
    mod = torch.nn.RNN(C, H, nonlinearity="relu", batch_first=True)
    set_dir(mod, "", k, r, b, np.zeros(H))
    seq, _ = run_rnn(mod, x, lengths)
    y = torch.softmax(seq.reshape(2, -1) @ t(dw) + t(db), dim=1)
    write_expected("keras2_simple_rnn", lengths, x, y.numpy())


def conv1d_causal():
    Fil, Kw, D, K = 4, 3, 2, 2
    lengths = [5, 5, 5]
    x = arr(3, T, C, scale=1.0)
    k, b = arr(Kw, C, Fil), arr(Fil, scale=0.2)
    dw, db = arr(Fil, K), arr(K, scale=0.1)
    model = sequential("sequential_5", [
        layer("Conv1D", "conv1d_1", batch_input_shape=[None, T, C], filters=Fil, kernel_size=[Kw], strides=[1], padding="causal",
              data_format="channels_last", dilation_rate=[D], activation="relu", use_bias=True,
              kernel_initializer={"class_name": "VarianceScaling", "config": {"scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": None}},
              bias_initializer={"class_name": "Zeros", "config": {}}, kernel_regularizer=None, bias_regularizer=None,
              activity_regularizer=None, kernel_constraint=None, bias_constraint=None),
        layer("GlobalMaxPooling1D", "global_max_pooling1d_1", data_format="channels_last"),
        dense("dense_5", K, "linear")])
    write_h5("keras2_conv1d_causal.h5", model, {"conv1d_1": [("conv1d_1/kernel:0", k), ("conv1d_1/bias:0", b)],
                                                "dense_5": [("dense_5/kernel:0", dw), ("dense_5/bias:0", db)]})
    xt = F.pad(t(x).transpose(1, 2), ((Kw - 1) * D, 0))  # causal: zeros before the first step
    conv = F.relu(F.conv1d(xt, t(k).permute(2, 1, 0), t(b), dilation=D))
    y = conv.max(dim=2).values @ t(dw) + t(db)
    write_expected("keras2_conv1d_causal", lengths, x, y.numpy())


def keras3_lstm():
    """Keras 3's saving_lib: config.json, and model.weights.h5 with layers/lstm/vars (empty: an
    RNN's variables are its cell's) and layers/lstm/cell/vars/0, 1, 2; layers/dense/vars/0, 1."""
    H, K = 3, 2
    lengths = [5, 3]
    x = pad(arr(2, T, C, scale=1.0), lengths)
    k, r, b = arr(C, 4 * H), arr(H, 4 * H), arr(4 * H, scale=0.2)
    dw, db = arr(H, K), arr(K, scale=0.1)
    lstm_cfg = rnn_config("lstm", H, seed=None, use_cudnn="auto")
    del lstm_cfg["implementation"]
    model = {"module": "keras", "class_name": "Sequential", "registered_name": None, "config": {"name": "sequential", "trainable": True, "dtype": "float32", "layers": [
        {"module": "keras.layers", "class_name": "InputLayer", "registered_name": None,
         "config": {"batch_shape": [None, T, C], "dtype": "float32", "sparse": False, "name": "input_layer"}},
        {"module": "keras.layers", "class_name": "LSTM", "registered_name": None, "config": lstm_cfg,
         "build_config": {"input_shape": [None, T, C]}},
        dict(dense("dense", K, "linear"), module="keras.layers", registered_name=None, build_config={"input_shape": [None, H]})],
        "build_input_shape": [None, T, C]}}
    path = os.path.join(HERE, "keras3_lstm.keras")
    h5_path = path + ".weights.h5"
    with h5py.File(h5_path, "w") as f:
        f.create_group("layers/lstm/vars")
        for i, v in enumerate((k, r, b)):
            f.create_dataset("layers/lstm/cell/vars/%d" % i, data=v)
        for i, v in enumerate((dw, db)):
            f.create_dataset("layers/dense/vars/%d" % i, data=v)
        f.create_group("vars")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("metadata.json", json.dumps({"keras_version": "3.3.3"}))
        z.writestr("config.json", json.dumps(model))
        z.write(h5_path, "model.weights.h5")
    os.remove(h5_path)
    lstm = torch.nn.LSTM(C, H, batch_first=True)
    set_dir(lstm, "", k, r, b, np.zeros(4 * H))
    _, h = run_rnn(lstm, x, lengths)
    write_expected("keras3_lstm", lengths, x, (h[0] @ t(dw) + t(db)).numpy())


def cudnn_lstm():
    """Its own seed, so adding it left the files above as they were."""
    global rng
    rng = np.random.default_rng(20261129)
    H, K = 4, 2
    lengths = [5, 5, 5]
    x = arr(3, T, C, scale=1.0)
    k, r, b = arr(C, 4 * H), arr(H, 4 * H), arr(8 * H, scale=0.2)
    dw, db = arr(H, K), arr(K, scale=0.1)
    cfg = {"name": "cu_dnnlstm_1", "trainable": True, "batch_input_shape": [None, T, C], "dtype": "float32",
           "return_sequences": False, "return_state": False, "go_backwards": False, "stateful": False, "units": H,
           "kernel_initializer": {"class_name": "VarianceScaling", "config": {"scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": None}},
           "recurrent_initializer": {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": None}},
           "bias_initializer": {"class_name": "Zeros", "config": {}}, "unit_forget_bias": True, "kernel_regularizer": None,
           "recurrent_regularizer": None, "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None,
           "recurrent_constraint": None, "bias_constraint": None}
    model = sequential("sequential_6", [{"class_name": "CuDNNLSTM", "config": cfg}, dense("dense_6", K, "linear")])
    write_h5("keras2_cudnn_lstm.h5", model, {
        "cu_dnnlstm_1": [("cu_dnnlstm_1/kernel:0", k), ("cu_dnnlstm_1/recurrent_kernel:0", r), ("cu_dnnlstm_1/bias:0", b)],
        "dense_6": [("dense_6/kernel:0", dw), ("dense_6/bias:0", db)]})
    lstm = torch.nn.LSTM(C, H, batch_first=True)
    set_dir(lstm, "", k, r, b[:4 * H], b[4 * H:])
    _, h = run_rnn(lstm, x, lengths)
    write_expected("keras2_cudnn_lstm", lengths, x, (h[0] @ t(dw) + t(db)).numpy())


def cudnn_gru():
    global rng
    rng = np.random.default_rng(20261130)
    H, K = 3, 2
    lengths = [5, 5]
    x = arr(2, T, C, scale=1.0)
    k, r, b = arr(C, 3 * H), arr(H, 3 * H), arr(6 * H, scale=0.2)
    dw, db = arr(H, K), arr(K, scale=0.1)
    cfg = {"name": "cu_dnngru_1", "trainable": True, "batch_input_shape": [None, T, C], "dtype": "float32",
           "return_sequences": False, "return_state": False, "go_backwards": False, "stateful": False, "units": H,
           "kernel_initializer": {"class_name": "VarianceScaling", "config": {"scale": 1.0, "mode": "fan_avg", "distribution": "uniform", "seed": None}},
           "recurrent_initializer": {"class_name": "Orthogonal", "config": {"gain": 1.0, "seed": None}},
           "bias_initializer": {"class_name": "Zeros", "config": {}}, "kernel_regularizer": None, "recurrent_regularizer": None,
           "bias_regularizer": None, "activity_regularizer": None, "kernel_constraint": None, "recurrent_constraint": None,
           "bias_constraint": None}
    model = sequential("sequential_7", [{"class_name": "CuDNNGRU", "config": cfg}, dense("dense_7", K, "linear")])
    write_h5("keras2_cudnn_gru.h5", model, {
        "cu_dnngru_1": [("cu_dnngru_1/kernel:0", k), ("cu_dnngru_1/recurrent_kernel:0", r), ("cu_dnngru_1/bias:0", b)],
        "dense_7": [("dense_7/kernel:0", dw), ("dense_7/bias:0", db)]})
    mod = torch.nn.GRU(C, H, batch_first=True)
    set_dir(mod, "", torch_gru_order(k, H), torch_gru_order(r, H), torch_gru_order(b[:3 * H], H), torch_gru_order(b[3 * H:], H))
    _, h = run_rnn(mod, x, lengths)
    write_expected("keras2_cudnn_gru", lengths, x, (h[0] @ t(dw) + t(db)).numpy())


CASES = {"embedding_lstm": embedding_lstm, "bilstm_timedistributed": bilstm_timedistributed,
         "gru_reset_after": lambda: gru(True), "gru_reset_before": lambda: gru(False), "simple_rnn": simple_rnn,
         "conv1d_causal": conv1d_causal, "keras3_lstm": keras3_lstm, "cudnn_lstm": cudnn_lstm,
         "cudnn_gru": cudnn_gru}

if __name__ == "__main__":
    import sys
    # All of them in this order (the shared random stream), or only those named.
    for name in sys.argv[1:] or CASES:
        CASES[name]()
