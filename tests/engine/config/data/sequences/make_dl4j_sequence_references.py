#!/usr/bin/env python3
"""DL4J sequence models with known parameters and their outputs, for
tests/engine/config/test_dl4j_sequence_import.cpp. For each model NAME this writes
  NAME.json               the DL4J configuration (ComputationGraph or MultiLayer, 1.0 "@class" form)
  NAME.coefficients.json  its parameters in DL4J's flattened order (the test zips them as coefficients.bin)
  NAME.expected.json      input rows in Thresher's sequence layout ([L, T*C values], time-major) and the
                          outputs (a per-step output: T*K values, zeros at padded steps)

The references follow DL4J's own equations on DL4J's own arrays, never Thresher's layout:
  LSTM (LSTMHelpers.activateHelper): z = x W + h RW[:, :4H] + b, blocks (a, f, o, g) of H columns:
    a = tanh(z_a); f = sigmoid(z_f + c_prev * RW[:, 4H]); g = sigmoid(z_g + c_prev * RW[:, 4H+2]);
    c = f c_prev + g a; o = sigmoid(z_o + c * RW[:, 4H+1]); h = o tanh(c)   (peepholes: Graves only)
    W [nIn, 4H] 'f', RW [H, 4H(+3)] 'f', b [1, 4H] (LSTMParamInitializer, GravesLSTMParamInitializer)
  GravesBidirectionalLSTM: WF, RWF, bF, WB, RWB, bB; output = forward + backward (the backward one
    runs from the last step to the first).
  Bidirectional(CONCAT): fW, fRW, fb, bW, bRW, bb; output = [forward, backward] per step.
  SimpleRnn: h = act(x W + h RW + b), W [nIn, H] 'f', RW [H, H] 'f', b.
  EmbeddingSequenceLayer: W [nIn, nOut] 'f', row = id (hasBias false: no b).
  Convolution1DLayer: b, W [nOut, nIn, k, 1] 'c'; Causal: the window ends at the output's step.
  Dense/Output/RnnOutput: W [nIn, nOut] 'f', b.
The plain LSTM loop is checked against torch.nn.LSTM (its gates reordered i, f, g, o) before use.
A sample shorter than T (masked) gets the reference of its first L steps: DL4J's masked steps
never reach the valid ones going forwards, and a last-step output takes step L-1. Backwards too:
Bidirectional reverses the padded input and its mask, and DL4J's LSTM zeroes the state (h and c)
at masked steps ("want 0 initialization in both directions", LSTMHelpers), so the backward
direction starts from zeros at step L-1, as on the first L steps alone.
"""
import json
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(23)


def arr(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


sigmoid = lambda z: 1 / (1 + np.exp(-z))


def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def dl4j_lstm(x, W, RW, b, peepholes, backwards=False):
    """x [T, C] -> [T, H], DL4J's loop (LSTMHelpers) in float64."""
    H = RW.shape[0]
    h, c = np.zeros(H), np.zeros(H)
    out = np.zeros((x.shape[0], H))
    steps = range(x.shape[0] - 1, -1, -1) if backwards else range(x.shape[0])
    for t in steps:
        z = x[t] @ W + h @ RW[:, :4 * H] + b
        a = np.tanh(z[:H])
        zf, zo, zg = z[H:2 * H], z[2 * H:3 * H], z[3 * H:]
        if peepholes:
            zf, zg = zf + c * RW[:, 4 * H], zg + c * RW[:, 4 * H + 2]
        f, g = sigmoid(zf), sigmoid(zg)
        c = f * c + g * a
        if peepholes:
            zo = zo + c * RW[:, 4 * H + 1]
        h = sigmoid(zo) * np.tanh(c)
        out[t] = h
    return out


def check_lstm_loop_against_torch():
    C, H, T = 3, 4, 6
    W, RW, b, x = arr(C, 4 * H), arr(H, 4 * H), arr(4 * H), arr(T, C)
    lstm = torch.nn.LSTM(C, H, batch_first=True).double()
    blocks = lambda m: [m[..., k * H:(k + 1) * H] for k in range(4)]  # a, f, o, g
    a, f, o, g = blocks(W)
    ra, rf, ro, rg = blocks(RW)
    ba, bf, bo, bg = blocks(b)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(torch.tensor(np.concatenate([g, f, a, o], axis=1).T))  # torch: i, f, g, o
        lstm.weight_hh_l0.copy_(torch.tensor(np.concatenate([rg, rf, ra, ro], axis=1).T))
        lstm.bias_ih_l0.copy_(torch.tensor(np.concatenate([bg, bf, ba, bo])))
        lstm.bias_hh_l0.zero_()
        want = lstm(torch.tensor(x, dtype=torch.float64)[None])[0][0].numpy()
    assert np.abs(dl4j_lstm(x.astype(np.float64), W, RW, b, False) - want).max() < 1e-12


def simple_rnn(x, W, RW, b, act):
    h = np.zeros(RW.shape[0])
    out = np.zeros((x.shape[0], RW.shape[0]))
    for t in range(x.shape[0]):
        h = act(x[t] @ W + h @ RW + b)
        out[t] = h
    return out


def causal_conv1d(x, W, b, dilation, act):
    """x [T, C], W [F, C, k] -> [T, F]: out[t] = b + sum_k W[:, :, k] x[t - (k_max - k) * d]."""
    T, (F, C, K) = x.shape[0], W.shape
    W, x = W.astype(np.float64), x.astype(np.float64)
    out = np.zeros((T, F))
    for t in range(T):
        acc = b.astype(np.float64).copy()
        for k in range(K):
            s = t - (K - 1 - k) * dilation
            if s >= 0:
                acc += W[:, :, k] @ x[s]
        out[t] = act(acc)
    return out


def check_conv_against_torch():
    x, W, b = arr(7, 3), arr(4, 3, 2), arr(4)
    conv = torch.nn.Conv1d(3, 4, 2, dilation=2, padding=2).double()
    with torch.no_grad():
        conv.weight.copy_(torch.tensor(W))
        conv.bias.copy_(torch.tensor(b))
        want = conv(torch.tensor(x.T, dtype=torch.float64)[None])[0].numpy()[:, :7].T  # left padding only
    assert np.abs(causal_conv1d(x, W, b, 2, lambda v: v) - want).max() < 1e-12


# ---------------------------------------------------------------------------------------------- DL4J JSON

act = lambda a: {"@class": "org.nd4j.linalg.activations.impl.Activation" + a}
upd = {"@class": "org.nd4j.linalg.learning.config.Sgd", "learningRate": 0.01}
init = {"@class": "org.deeplearning4j.nn.weights.WeightInitXavier"}
mcxent = {"@class": "org.nd4j.linalg.lossfunctions.impl.LossMCXENT"}


def layer(cls, fields, package="org.deeplearning4j.nn.conf.layers."):
    return dict(fields, **{"@class": package + cls})


def lstm_fields(name, nin, nout, graves=False):
    return layer("GravesLSTM" if graves else "LSTM", {
        "layerName": name, "nin": nin, "nout": nout, "activationFn": act("TanH"), "gateActivationFn": act("Sigmoid"),
        "forgetGateBiasInit": 1.0, "iupdater": upd, "weightInitFn": init})


def conf(layer_json):
    return {"layer": layer_json, "seed": 7, "miniBatch": True, "minimize": True,
            "optimizationAlgo": "STOCHASTIC_GRADIENT_DESCENT", "stepFunction": None, "variables": []}


def dense_fields(cls, name, nin, nout, a, loss=True):
    f = {"layerName": name, "nin": nin, "nout": nout, "hasBias": True, "activationFn": act(a), "iupdater": upd,
         "weightInitFn": init}
    if loss:
        f["lossFn"] = mcxent
    return layer(cls, f)


def graph(chain, steps, features):
    """A ComputationGraph of vertices read one after the other: [(name, vertex json)]."""
    vertices, inputs, prev = {}, {}, "in"
    for name, v in chain:
        vertices[name] = v
        inputs[name] = [prev]
        prev = name
    return {"vertices": vertices, "vertexInputs": inputs, "networkInputs": ["in"], "networkOutputs": [prev],
            "networkInputTypes": [{"@class": "org.deeplearning4j.nn.conf.inputs.InputType$InputTypeRecurrent",
                                   "size": features, "timeSeriesLength": steps, "format": "NCW"}],
            "backpropType": "Standard", "tbpttFwdLength": 20, "tbpttBackLength": 20, "iterationCount": 0,
            "epochCount": 0, "dataType": "FLOAT"}


def lv(layer_json):
    return {"@class": "org.deeplearning4j.nn.conf.graph.LayerVertex", "layerConf": conf(layer_json),
            "outputVertex": False, "preProcessor": None}


def write(name, config, params, x, lengths, forward):
    """params: [(array, order)] in DL4J's order; forward(x_valid [L, C]) -> [L, K] or [K]."""
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(config, f, indent=1)
    flat = np.concatenate([np.asarray(a, dtype=np.float32).ravel(order=o) for a, o in params])
    with open(os.path.join(HERE, name + ".coefficients.json"), "w") as f:
        json.dump({"coefficients": flat.tolist()}, f)
    rows, outs = [], []
    T = x.shape[1]
    for s in range(x.shape[0]):
        L = lengths[s]
        xs = x[s].copy()
        xs[L:] = 0
        rows.append([float(L)] + xs.ravel().tolist())
        y = np.asarray(forward(x[s, :L].astype(np.float64)))
        if y.ndim == 2:  # per step: zeros at padded steps
            y = np.concatenate([y, np.zeros((T - L, y.shape[1]))]).ravel()
        outs.append(y.tolist())
    with open(os.path.join(HERE, name + ".expected.json"), "w") as f:
        json.dump({"lengths": lengths, "inputs": rows, "outputs": outs}, f)


def lstm_rnnoutput():
    """LSTM -> RnnOutputLayer (softmax per step); one sample masked (3 of 5 steps)."""
    C, H, K, T = 3, 4, 3, 5
    W, RW, b, Wo, bo = arr(C, 4 * H), arr(H, 4 * H), arr(4 * H), arr(H, K), arr(K)
    config = graph([("lstm", lv(lstm_fields("lstm", C, H))),
                    ("out", lv(dense_fields("RnnOutputLayer", "out", H, K, "Softmax")))], T, C)
    forward = lambda xs: softmax(dl4j_lstm(xs, W, RW, b, False) @ Wo + bo)
    write("dl4j_seq_lstm_rnnoutput", config, [(W, "F"), (RW, "F"), (b, "C"), (Wo, "F"), (bo, "C")],
          arr(3, T, C, scale=1.0), [5, 3, 5], forward)


def graves_last_step():
    """GravesLSTM (peepholes) -> LastTimeStepVertex -> OutputLayer; one sample masked (4 of 6)."""
    C, H, K, T = 3, 4, 2, 6
    W, RW, b, Wo, bo = arr(C, 4 * H), arr(H, 4 * H + 3), arr(4 * H), arr(H, K), arr(K)
    config = graph([("graves", lv(lstm_fields("graves", C, H, graves=True))),
                    ("last", {"@class": "org.deeplearning4j.nn.conf.graph.rnn.LastTimeStepVertex", "maskArrayInputName": "in"}),
                    ("out", lv(dense_fields("OutputLayer", "out", H, K, "Softmax")))], T, C)
    forward = lambda xs: softmax(dl4j_lstm(xs, W, RW, b, True)[-1] @ Wo + bo)
    write("dl4j_seq_graves_last_step", config, [(W, "F"), (RW, "F"), (b, "C"), (Wo, "F"), (bo, "C")],
          arr(3, T, C, scale=1.0), [6, 4, 6], forward)


def bidirectional_concat():
    """Bidirectional(LSTM, CONCAT) -> LastTimeStep(LSTM) -> OutputLayer; one sample masked (3 of 5)."""
    C, H, H2, K, T = 3, 4, 3, 2, 5
    fW, fRW, fb, bW, bRW, bb = arr(C, 4 * H), arr(H, 4 * H), arr(4 * H), arr(C, 4 * H), arr(H, 4 * H), arr(4 * H)
    W2, RW2, b2, Wo, bo = arr(2 * H, 4 * H2), arr(H2, 4 * H2), arr(4 * H2), arr(H2, K), arr(K)
    bi = layer("Bidirectional", {"layerName": "bi", "mode": "CONCAT", "nin": C, "nout": H,
                                 "fwd": lstm_fields("bi", C, H), "bwd": lstm_fields("bi", C, H)},
               "org.deeplearning4j.nn.conf.layers.recurrent.")
    last = layer("LastTimeStep", {"layerName": "last", "underlying": lstm_fields("last", 2 * H, H2)},
                 "org.deeplearning4j.nn.conf.layers.recurrent.")
    config = graph([("bi", lv(bi)), ("last", lv(last)), ("out", lv(dense_fields("OutputLayer", "out", H2, K, "Softmax")))], T, C)

    def forward(xs):
        both = np.concatenate([dl4j_lstm(xs, fW, fRW, fb, False), dl4j_lstm(xs, bW, bRW, bb, False, backwards=True)], axis=1)
        return softmax(dl4j_lstm(both, W2, RW2, b2, False)[-1] @ Wo + bo)
    params = [(fW, "F"), (fRW, "F"), (fb, "C"), (bW, "F"), (bRW, "F"), (bb, "C"), (W2, "F"), (RW2, "F"), (b2, "C"),
              (Wo, "F"), (bo, "C")]
    write("dl4j_seq_bidirectional_concat", config, params, arr(3, T, C, scale=1.0), [5, 3, 5], forward)


def bidirectional_last_step():
    """Bidirectional(LastTimeStep(LSTM), ADD) -> OutputLayer: the forward state after step L-1 plus the
    backward one after reading back to step 0 (DL4J's backward LastTimeStep reads the reversed input,
    whose last valid step is step 0); one sample masked (2 of 4)."""
    C, H, K, T = 2, 3, 2, 4
    fW, fRW, fb, bW, bRW, bb = arr(C, 4 * H), arr(H, 4 * H), arr(4 * H), arr(C, 4 * H), arr(H, 4 * H), arr(4 * H)
    Wo, bo = arr(H, K), arr(K)
    last = lambda name: layer("LastTimeStep", {"layerName": name, "underlying": lstm_fields(name, C, H)},
                              "org.deeplearning4j.nn.conf.layers.recurrent.")
    bi = layer("Bidirectional", {"layerName": "bi", "mode": "ADD", "nin": C, "nout": H, "fwd": last("bi"), "bwd": last("bi")},
               "org.deeplearning4j.nn.conf.layers.recurrent.")
    config = graph([("bi", lv(bi)), ("out", lv(dense_fields("OutputLayer", "out", H, K, "Softmax")))], T, C)

    def forward(xs):
        both = dl4j_lstm(xs, fW, fRW, fb, False)[-1] + dl4j_lstm(xs, bW, bRW, bb, False, backwards=True)[0]
        return softmax(both @ Wo + bo)
    params = [(fW, "F"), (fRW, "F"), (fb, "C"), (bW, "F"), (bRW, "F"), (bb, "C"), (Wo, "F"), (bo, "C")]
    write("dl4j_seq_bidirectional_last_step", config, params, arr(3, T, C, scale=1.0), [4, 2, 4], forward)


def graves_bidirectional_simple_rnn():
    """GravesBidirectionalLSTM (sum, peepholes) -> LastTimeStep(SimpleRnn tanh) -> OutputLayer."""
    C, H, H2, K, T = 3, 4, 3, 2, 5
    WF, RWF, bF, WB, RWB, bB = arr(C, 4 * H), arr(H, 4 * H + 3), arr(4 * H), arr(C, 4 * H), arr(H, 4 * H + 3), arr(4 * H)
    W2, RW2, b2, Wo, bo = arr(H, H2), arr(H2, H2), arr(H2), arr(H2, K), arr(K)
    gb = lstm_fields("gbi", C, H)
    gb["@class"] = "org.deeplearning4j.nn.conf.layers.GravesBidirectionalLSTM"
    rnn = layer("LastTimeStep", {"layerName": "rnn", "underlying": layer("SimpleRnn", {
        "layerName": "rnn", "nin": H, "nout": H2, "activationFn": act("TanH"), "iupdater": upd, "weightInitFn": init},
        "org.deeplearning4j.nn.conf.layers.recurrent.")}, "org.deeplearning4j.nn.conf.layers.recurrent.")
    config = graph([("gbi", lv(gb)), ("rnn", lv(rnn)), ("out", lv(dense_fields("OutputLayer", "out", H2, K, "Softmax")))], T, C)

    def forward(xs):
        both = dl4j_lstm(xs, WF, RWF, bF, True) + dl4j_lstm(xs, WB, RWB, bB, True, backwards=True)
        return softmax(simple_rnn(both, W2, RW2, b2, np.tanh)[-1] @ Wo + bo)
    params = [(WF, "F"), (RWF, "F"), (bF, "C"), (WB, "F"), (RWB, "F"), (bB, "C"), (W2, "F"), (RW2, "F"), (b2, "C"),
              (Wo, "F"), (bo, "C")]
    write("dl4j_seq_graves_bidirectional_simple_rnn", config, params, arr(2, T, C, scale=1.0), [5, 5], forward)


def embedding_lstm():
    """MultiLayer: EmbeddingSequenceLayer (inputLength 6) -> LSTM -> RnnOutputLayer; one sample masked."""
    V, E, H, K, T = 7, 3, 4, 2, 6
    We, W, RW, b, Wo, bo = arr(V, E), arr(E, 4 * H), arr(H, 4 * H), arr(4 * H), arr(H, K), arr(K)
    emb = layer("EmbeddingSequenceLayer", {"layerName": "emb", "nin": V, "nout": E, "inputLength": T, "hasBias": False,
                                           "activationFn": act("Identity"), "iupdater": upd, "weightInitFn": init})
    config = {"confs": [conf(emb), conf(lstm_fields("lstm", E, H)),
                        conf(dense_fields("RnnOutputLayer", "out", H, K, "Softmax"))],
              "backpropType": "Standard", "tbpttFwdLength": 20, "tbpttBackLength": 20, "iterationCount": 0,
              "epochCount": 0, "dataType": "FLOAT", "inputPreProcessors": {}}
    ids = rng.integers(0, V, size=(3, T, 1)).astype(np.float32)
    forward = lambda xs: softmax(dl4j_lstm(We[xs[:, 0].astype(int)].astype(np.float64), W, RW, b, False) @ Wo + bo)
    write("dl4j_seq_embedding_lstm", config, [(We, "F"), (W, "F"), (RW, "F"), (b, "C"), (Wo, "F"), (bo, "C")],
          ids, [6, 4, 6], forward)


def conv1d_causal_pooling():
    """Convolution1DLayer (Causal, kernel 2, dilation 2, tanh) -> GlobalPooling MAX -> OutputLayer; one masked."""
    C, F, K, T = 3, 4, 2, 7
    Wc, bc, Wo, bo = arr(F, C, 2), arr(F), arr(F, K), arr(K)
    conv = layer("Convolution1DLayer", {"layerName": "conv", "nin": C, "nout": F, "kernelSize": [2, 1], "stride": [1, 1],
                                        "padding": [0, 0], "dilation": [2, 1], "convolutionMode": "Causal", "hasBias": True,
                                        "activationFn": act("TanH"), "iupdater": upd, "weightInitFn": init})
    pool = layer("GlobalPoolingLayer", {"layerName": "pool", "poolingType": "MAX", "collapseDimensions": True})
    config = graph([("conv", lv(conv)), ("pool", lv(pool)), ("out", lv(dense_fields("OutputLayer", "out", F, K, "Softmax")))], T, C)
    forward = lambda xs: softmax(causal_conv1d(xs, Wc, bc, 2, np.tanh).max(axis=0) @ Wo + bo)
    write("dl4j_seq_conv1d_causal_pooling", config, [(bc, "C"), (Wc[..., None], "C"), (Wo, "F"), (bo, "C")],
          arr(3, T, C, scale=1.0), [7, 5, 7], forward)


check_lstm_loop_against_torch()
check_conv_against_torch()
lstm_rnnoutput()
graves_last_step()
bidirectional_concat()
graves_bidirectional_simple_rnn()
embedding_lstm()
conv1d_causal_pooling()
bidirectional_last_step()
