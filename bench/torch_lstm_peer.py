#!/usr/bin/python3
"""PyTorch peer of bench_lstm_throughput: the same stacked LSTM, sizes, Adam and synthetic data.

Prints one JSON line: samples/s over the timed iterations and the peak RSS in MiB. Run with
Debian's /usr/bin/python3 (python3-torch)."""
import argparse
import json
import resource
import time

import torch


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in [("threads", 2), ("batch", 32), ("steps", 64), ("features", 64), ("hidden", 256), ("layers", 2),
                          ("iterations", 30), ("warmup", 3)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--device", default="cpu", help="cpu or cuda:N (the same network on the GPU)")
    a = p.parse_args()
    dev = torch.device(a.device)
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(a.features, a.hidden, num_layers=a.layers, batch_first=True)
            self.out = torch.nn.Linear(a.hidden, 10)

        def forward(self, x):
            y, _ = self.lstm(x)
            return self.out(y[:, -1])

    model = Model().to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.randn(a.batch, a.steps, a.features).to(dev)
    y = torch.randint(0, 10, (a.batch,)).to(dev)

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def step():
        opt.zero_grad()
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(a.warmup):
        step()
    start = time.perf_counter()
    sync()
    for _ in range(a.iterations):
        step()
    sync()
    seconds = time.perf_counter() - start
    print(json.dumps({"impl": "torch " + torch.__version__, "samples_per_s": round(a.iterations * a.batch / seconds, 2),
                      "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
                      "threads": a.threads, "batch": a.batch, "steps": a.steps, "hidden": a.hidden, "layers": a.layers,
                      "iterations": a.iterations, "device": a.device}))


if __name__ == "__main__":
    main()
