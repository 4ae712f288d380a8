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

# Activations torch's modules lack (Keras 2 / DL4J hard sigmoid gates; softsign, relu cells): the
# cell equations written out as a loop in float64, each sample run alone over its own length (the
# reverse direction over the sample flipped within its length), independent of Thresher's code.
# Parameters are drawn directly in Thresher's layout: per direction W [IN x G*H], R [H x G*H],
# b, then P [3 x H] (i, f, o) with peepholes.
ACTS = {
    "hardsigmoid": lambda a: (lambda x: torch.clamp(a * x + 0.5, 0.0, 1.0)),
    "softsign": lambda a: (lambda x: x / (1 + x.abs())),
    "relu": lambda a: torch.relu,
    "sigmoid": lambda a: torch.sigmoid,
    "tanh": lambda a: torch.tanh,
}


def run_direction(cell, xs, p, ga, ca, peepholes, reset_after):
    g = {"lstm": 4, "gru": 3, "rnn": 1}[cell]
    w, p = p[:IN * g * H].view(IN, g * H), p[IN * g * H:]
    r, p = p[:H * g * H].view(H, g * H), p[H * g * H:]
    nb = 4 * H if cell == "gru" and reset_after else g * H
    b, p = p[:nb], p[nb:]
    h = torch.zeros(H, dtype=torch.float64)
    c = torch.zeros(H, dtype=torch.float64)
    out = []
    for x in xs:
        if cell == "lstm":
            zi, zf, zg, zo = (x @ w + h @ r + b).split(H)
            pi, pf, po = (p.view(3, H) if peepholes else torch.zeros(3, H, dtype=torch.float64))
            i, f = ga(zi + pi * c), ga(zf + pf * c)
            c = f * c + i * ca(zg)
            h = ga(zo + po * c) * ca(c)
        elif cell == "gru":
            wu, wr, wo = w.split(H, 1)
            ru, rr, ro = r.split(H, 1)
            u, rg = ga(x @ wu + h @ ru + b[:H]), ga(x @ wr + h @ rr + b[H:2 * H])
            if reset_after:
                o = ca(x @ wo + b[2 * H:3 * H] + rg * (h @ ro + b[3 * H:]))
            else:
                o = ca(x @ wo + b[2 * H:3 * H] + (rg * h) @ ro)
            h = u * h + (1 - u) * o
        else:
            h = ca(x @ w + h @ r + b)
        out.append(h)
    return torch.stack(out)


def loop_case(name, cell, activation, gate, gate_alpha=0.2, peepholes=False, reset_after=True, bidirectional=False):
    g = {"lstm": 4, "gru": 3, "rnn": 1}[cell]
    per_dir = IN * g * H + H * g * H + (4 * H if cell == "gru" and reset_after else g * H) + (3 * H if peepholes else 0)
    dirs = 2 if bidirectional else 1
    params = (torch.rand(dirs * per_dir, dtype=torch.float64) * 2 - 1) * 0.9
    x = torch.randn(N, T, IN, dtype=torch.float64) * 1.5
    for n, length in enumerate(LENGTHS):
        x[n, length:] = 0
    ga, ca = ACTS[gate](gate_alpha), ACTS[activation](None)
    y = torch.zeros(N, T, dirs * H, dtype=torch.float64)
    for n, length in enumerate(LENGTHS):
        xs = x[n, :length]
        y[n, :length, :H] = run_direction(cell, xs, params[:per_dir], ga, ca, peepholes, reset_after)
        if bidirectional:
            back = run_direction(cell, xs.flip(0), params[per_dir:], ga, ca, peepholes, reset_after)
            y[n, :length, H:] = back.flip(0)
    return {
        "name": name,
        "cell": cell,
        "bidirectional": bidirectional,
        "activation": activation,
        "gate_activation": gate,
        "gate_alpha": gate_alpha,
        "peepholes": peepholes,
        "reset_after": reset_after,
        "tolerance": 1e-5,
        "batch": N, "steps": T, "in": IN, "hidden": H,
        "lengths": LENGTHS,
        "x": x.flatten().tolist(),
        "params": params.tolist(),
        "y": y.flatten().tolist(),
    }


torch.manual_seed(2311)
cases += [
    loop_case("bidirectional lstm, hardsigmoid gates, softsign cell, peepholes (loop)", "lstm", "softsign", "hardsigmoid",
              peepholes=True, bidirectional=True),
    loop_case("gru reset before, hardsigmoid 1/6 gates, relu candidate (loop)", "gru", "relu", "hardsigmoid", gate_alpha=1 / 6,
              reset_after=False),
    loop_case("gru reset after, hardsigmoid gates, relu candidate (loop)", "gru", "relu", "hardsigmoid"),
    loop_case("bidirectional simple_rnn softsign (loop)", "rnn", "softsign", "sigmoid", bidirectional=True),
]
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rnn_reference.json")
with open(out, "w") as f:
    json.dump({"generator": "tests/engine/nn/data/make_rnn_reference.py", "torch": torch.__version__, "cases": cases}, f)
print("wrote", out, len(cases), "cases")
