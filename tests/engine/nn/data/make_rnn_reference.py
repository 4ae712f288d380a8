#!/usr/bin/python3
# Writes rnn_reference.json: small PyTorch recurrent layers (weights, inputs with variable
# lengths, outputs) for test_rnn_reference, which runs Thresher's RnnOp on the same weights.
# Run with Debian's python3 (it has torch): /usr/bin/python3 make_rnn_reference.py
#
# Gate orders (seq_spec.md): Thresher and oneDNN hold LSTM columns i, f, g, o (torch's rows are
# the same order), GRU columns u (torch z), r, o (torch n); torch's GRU applies the reset after
# the recurrent matmul, which is Thresher's reset_after (oneDNN's linear-before-reset GRU), whose
# 4th bias is torch's b_hn. Torch keeps weight_ih [G*H x in]: ours is its transpose.
import json
import os

import torch
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

torch.manual_seed(23)
N, T, IN, H = 3, 6, 3, 4
LENGTHS = [6, 4, 1]


def gate_blocks(w, cell):
    """torch's [G*H x k] rows in its gate order -> ours [k x G*H], gate-major columns."""
    if cell == "gru":
        r, z, n = w.split(H, 0)
        w = torch.cat([z, r, n], 0)
    return w.t().contiguous()


def direction_params(m, suffix, cell):
    w = gate_blocks(getattr(m, "weight_ih_l0" + suffix).detach(), cell)
    r = gate_blocks(getattr(m, "weight_hh_l0" + suffix).detach(), cell)
    b_ih = getattr(m, "bias_ih_l0" + suffix).detach()
    b_hh = getattr(m, "bias_hh_l0" + suffix).detach()
    if cell == "gru":
        ir, iz, inn = b_ih.split(H)
        hr, hz, hn = b_hh.split(H)
        b = torch.cat([iz + hz, ir + hr, inn, hn])
    else:
        b = b_ih + b_hh
    return torch.cat([w.flatten(), r.flatten(), b])


def case(name, cell, module, bidirectional):
    x = torch.randn(N, T, IN)
    for n, length in enumerate(LENGTHS):
        x[n, length:] = 0
    with torch.no_grad():
        packed = pack_padded_sequence(x, torch.tensor(LENGTHS), batch_first=True, enforce_sorted=False)
        y, _ = module(packed)
        y, _ = pad_packed_sequence(y, batch_first=True, total_length=T)
    params = [direction_params(module, "", cell)]
    if bidirectional:
        params.append(direction_params(module, "_reverse", cell))
    return {
        "name": name,
        "cell": cell,
        "bidirectional": bidirectional,
        "batch": N, "steps": T, "in": IN, "hidden": H,
        "lengths": LENGTHS,
        "x": x.flatten().tolist(),
        "params": torch.cat(params).tolist(),
        # [N, T, D*H], the directions concatenated (Keras's "concat"), zeros at padded steps.
        "y": y.flatten().tolist(),
    }


cases = [
    case("lstm", "lstm", torch.nn.LSTM(IN, H, batch_first=True), False),
    case("gru (reset after)", "gru", torch.nn.GRU(IN, H, batch_first=True), False),
    case("simple_rnn tanh", "rnn", torch.nn.RNN(IN, H, batch_first=True), False),
    case("bidirectional lstm", "lstm", torch.nn.LSTM(IN, H, batch_first=True, bidirectional=True), True),
    case("bidirectional gru", "gru", torch.nn.GRU(IN, H, batch_first=True, bidirectional=True), True),
]
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rnn_reference.json")
with open(out, "w") as f:
    json.dump({"generator": "tests/engine/nn/data/make_rnn_reference.py", "torch": torch.__version__, "cases": cases}, f)
print("wrote", out, len(cases), "cases")
