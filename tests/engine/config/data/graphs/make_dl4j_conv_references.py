#!/usr/bin/env python3
"""DL4J model zips' contents for the models of keras2_depthwise_separable.h5 and
keras2_conv_transpose.h5 (make_graph_references.py), with the same weights laid out as DL4J's
ParamInitializers view them, so tests/engine/config/test_graph_weights.cpp can import each and
compare Thresher's predictions with the PyTorch outputs already in the *.expected.json files.

The layouts here are numpy transposes of Keras's arrays, written independently of Thresher's
index arithmetic (engine/config/dl4j_layout.cpp):
  DepthwiseConvolution2D  b [nIn*m], W [m, nIn, kh, kw] 'c'   (DepthwiseConvolutionParamInitializer)
  SeparableConvolution2D  b [nOut], W [m, nIn, kh, kw] 'c', pW [nOut, nIn*m, 1, 1] 'c'
                                                               (SeparableConvolutionParamInitializer)
  Deconvolution2D         b [nOut], W [nIn, nOut, kh, kw] 'c' (DeconvolutionParamInitializer)
  OutputLayer             W [nIn, nOut] 'f', b                (DefaultParamInitializer)
Keras's depthwise kernel [kh, kw, in, m] puts output channel c*m + k where DL4J does (libnd4j's
depthwise_conv2d takes [kh, kw, in, m], the permute(2, 3, 1, 0) of DL4J's W); Keras's
Conv2DTranspose kernel is [kh, kw, out, in].

  dl4j_depthwise_separable.json / .coefficients.json
  dl4j_conv_transpose.json / .coefficients.json
"""
import json
import os

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def weights(name):
    out = {}
    with h5py.File(os.path.join(HERE, name), "r") as f:
        g = f["model_weights"]
        for layer in g.attrs["layer_names"]:
            layer = layer.decode()
            for w in g[layer].attrs["weight_names"]:
                w = w.decode()
                out[w] = np.array(g[layer][w], dtype=np.float32)
    return out


def conf(cls, fields):
    fields = dict(fields, **{"@class": "org.deeplearning4j.nn.conf.layers." + cls})
    return {"layer": fields, "seed": 7, "miniBatch": True, "minimize": True,
            "optimizationAlgo": "STOCHASTIC_GRADIENT_DESCENT", "stepFunction": None, "variables": []}


act = lambda a: {"@class": "org.nd4j.linalg.activations.impl.Activation" + a}
upd = {"@class": "org.nd4j.linalg.learning.config.Sgd", "learningRate": 0.01}


def conv_fields(name, nin, nout, k, s, mode, a, **extra):
    return dict({"layerName": name, "nin": nin, "nout": nout, "kernelSize": k, "stride": s, "padding": [0, 0],
                 "dilation": [1, 1], "convolutionMode": mode, "hasBias": True, "activationFn": act(a), "iupdater": upd}, **extra)


def tail(nin, nout):
    return [conf("GlobalPoolingLayer", {"layerName": "gap", "poolingType": "AVG", "collapseDimensions": True}),
            conf("OutputLayer", {"layerName": "out", "nin": nin, "nout": nout, "hasBias": True, "activationFn": act("Softmax"),
                                 "lossFn": {"@class": "org.nd4j.linalg.lossfunctions.impl.LossMCXENT"}, "iupdater": upd})]


def write(name, confs, h, w, c, flat):
    config = {"backpropType": "Standard", "confs": confs, "dataType": "FLOAT", "iterationCount": 0, "epochCount": 0,
              "inputPreProcessors": {"0": {"@class": "org.deeplearning4j.nn.conf.preprocessor.FeedForwardToCnnPreProcessor",
                                           "inputHeight": h, "inputWidth": w, "numChannels": c}}}
    with open(os.path.join(HERE, name + ".json"), "w") as f:
        json.dump(config, f, indent=1)
    flat = np.concatenate([np.asarray(a, dtype=np.float32).ravel(order=o) for a, o in flat])
    with open(os.path.join(HERE, name + ".coefficients.json"), "w") as f:
        json.dump({"coefficients": flat.tolist()}, f)


def separable():
    k = weights("keras2_depthwise_separable.h5")
    H, W, C = 8, 8, 3
    dw1, b1 = k["dw/depthwise_kernel:0"], k["dw/bias:0"]
    dw2, pw2, b2 = k["sep/depthwise_kernel:0"], k["sep/pointwise_kernel:0"], k["sep/bias:0"]
    dense_w, dense_b = k["out/kernel:0"], k["out/bias:0"]
    to_dl4j = lambda d: np.transpose(d, (3, 2, 0, 1))  # [kh, kw, in, m] -> [m, in, kh, kw]
    confs = [conf("DepthwiseConvolution2D", conv_fields("dw", C, C * 2, [3, 3], [1, 1], "Same", "ReLU", depthMultiplier=2)),
             conf("SeparableConvolution2D", conv_fields("sep", C * 2, 4, [3, 3], [1, 1], "Truncate", "TanH", depthMultiplier=2))]
    confs += tail(4, 5)
    flat = [(b1, "C"), (to_dl4j(dw1), "C"),
            (b2, "C"), (to_dl4j(dw2), "C"), (np.transpose(pw2, (3, 2, 0, 1)), "C"),  # pW [filters, in*m, 1, 1]
            (dense_w, "F"), (dense_b, "C")]
    write("dl4j_depthwise_separable", confs, H, W, C, flat)


def transposed():
    k = weights("keras2_conv_transpose.h5")
    h, w, c = 5, 6, 2
    to_dl4j = lambda t: np.transpose(t, (3, 2, 0, 1))  # [kh, kw, out, in] -> [in, out, kh, kw]
    confs = [conf("Deconvolution2D", conv_fields("up1", c, 3, [3, 3], [2, 2], "Truncate", "ReLU")),
             conf("Deconvolution2D", conv_fields("up2", 3, 2, [4, 3], [2, 1], "Same", "TanH"))]
    confs += tail(2, 4)
    flat = [(k["up1/bias:0"], "C"), (to_dl4j(k["up1/kernel:0"]), "C"), (k["up2/bias:0"], "C"), (to_dl4j(k["up2/kernel:0"]), "C"),
            (k["out/kernel:0"], "F"), (k["out/bias:0"], "C")]
    write("dl4j_conv_transpose", confs, h, w, c, flat)


separable()
transposed()
