#!/usr/bin/python3
"""PyTorch peer for the throughput benchmark: trains the same models as thresher-engine on
Fashion-MNIST with the same hyper-parameters, so engine and PyTorch figures can be set side by side.

Models (as in DL4J's LeNet example: no activation after the convolutions):
  lenet: Conv2d(1,20,5) -> MaxPool(2,2) -> Conv2d(20,50,5) -> MaxPool(2,2) -> Linear(800,500)
         -> ReLU -> Linear(500,10)
  mlp:   Linear(784,1000) -> ReLU -> Linear(1000,1000) -> ReLU -> Linear(1000,10)
  resnet: resources/models/resnet.json, a graph: a 3x3 stem (16) with batch norm, three residual
         blocks (16, 32 and 64 channels; the last two halve the image and add a 1x1 stride-2
         shortcut convolution), global average pooling, Linear(64,10); He-normal weights (DL4J's
         RELU init), Adam. Stride-2 3x3 convolutions pad 1 on both sides here, where the engine's
         "same" mode pads 0 before and 1 after (DL4J's rule): the same cost, a one-pixel shift.
Softmax + cross-entropy, Xavier (normal, DL4J's XAVIER) weights and zero biases, SGD with
Nesterov momentum (DL4J's Nesterovs updater; the same arithmetic cost as plain momentum) with
the learning rate, momentum and L2 (weights only) read from resources/models/<model>.json,
training set shuffled every epoch.

--device cuda (bench/gpu_throughput.sh) keeps the model and the whole data set on the GPU and
turns TF32 off for convolutions and matrix products (PyTorch allows it for cuDNN convolutions by
default), so both sides compute in plain FP32 as thresher-engine's CUDA backend does; --tf32
allows it again. Every iteration reads the loss back (loss.item()), which waits for the GPU, as
the engine does when it computes the loss on the host.

Output, JSON lines on stdout:
  per epoch {"epoch","samples_per_s","loss","accuracy",...}: samples_per_s counts the training
    samples of that epoch over the pure training time (shuffling, forward, backward, update);
    the test-set evaluation that gives "accuracy" is not timed.
  at the end {"peer":"pytorch","model","samples_per_s","accuracy","peak_rss_mb",...}:
    samples_per_s over all epochs' training time, accuracy of the last epoch, and the process's
    peak resident set size (getrusage ru_maxrss, which Linux reports in KiB).
"""
import argparse
import gzip
import json
import os
import resource
import time

import numpy as np
import torch
from torch import nn

DATA_DIR = "/usr/share/datasets/fashion-mnist"


def read_idx(path, expected_dims):
    """Reads a gzip-compressed IDX file (big-endian header: magic 0x0000_08_<dims>, then sizes)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    if magic >> 8 != 0x08 or (magic & 0xFF) != expected_dims:
        raise SystemExit(f"{path}: not an unsigned-byte IDX file with {expected_dims} dimensions "
                         f"(magic 0x{magic:08x})")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(expected_dims)]
    offset = 4 + 4 * expected_dims
    data = np.frombuffer(raw, dtype=np.uint8, offset=offset)
    if data.size != int(np.prod(dims)):
        raise SystemExit(f"{path}: header says {dims} but holds {data.size} bytes of data")
    return data.reshape(dims)


def load_split(data_dir, prefix, limit=None):
    images = read_idx(f"{data_dir}/{prefix}-images-idx3-ubyte.gz", 3)
    labels = read_idx(f"{data_dir}/{prefix}-labels-idx1-ubyte.gz", 1)
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    x = torch.from_numpy(images.astype(np.float32) / 255.0).unsqueeze(1)  # [N, 1, 28, 28]
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


class ResidualBlock(nn.Module):
    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1)
        self.bn1 = nn.BatchNorm2d(c_out, eps=1e-5, momentum=0.1)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(c_out, eps=1e-5, momentum=0.1)
        self.shortcut = nn.Conv2d(c_in, c_out, 1, stride=stride) if stride != 1 or c_in != c_out else None

    def forward(self, x):
        y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(y + (self.shortcut(x) if self.shortcut is not None else x))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16, eps=1e-5, momentum=0.1), nn.ReLU())
        self.blocks = nn.Sequential(ResidualBlock(16, 16, 1), ResidualBlock(16, 32, 2), ResidualBlock(32, 64, 2))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(self.blocks(self.stem(x)).mean(dim=(2, 3)))


def build_model(name):
    if name == "resnet":
        model = ResNet()
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                nn.init.zeros_(m.bias)
        return model
    if name == "lenet":
        model = nn.Sequential(
            nn.Conv2d(1, 20, 5), nn.MaxPool2d(2, 2),
            nn.Conv2d(20, 50, 5), nn.MaxPool2d(2, 2),
            nn.Flatten(),
            nn.Linear(800, 500), nn.ReLU(),
            nn.Linear(500, 10))
    else:
        model = nn.Sequential(
            nn.Flatten(),
            nn.Linear(784, 1000), nn.ReLU(),
            nn.Linear(1000, 1000), nn.ReLU(),
            nn.Linear(1000, 10))
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.xavier_normal_(m.weight)
            nn.init.zeros_(m.bias)
    return model


def evaluate(model, x, y, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, x.shape[0], batch):
            logits = model(x[start:start + batch])
            correct += (logits.argmax(dim=1) == y[start:start + batch]).sum().item()
    model.train()
    return correct / x.shape[0]


def emit(record):
    print(json.dumps(record), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["lenet", "mlp", "resnet"], default="lenet")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--limit", type=int, default=None,
                        help="train on the first N training samples only (quick runs)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--model-json", default=None,
                        help="the engine's model file to take learning rate, momentum and L2 from "
                             "(default resources/models/<model>.json)")
    parser.add_argument("--data-dir", default=DATA_DIR)
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    parser.add_argument("--warmup", type=int, default=0,
                        help="leave the first N iterations of the run out of the timing, as the "
                             "engine's summary leaves out its first 20 (CUDA start-up, cuDNN choices)")
    parser.add_argument("--tf32", action="store_true",
                        help="on CUDA, let cuDNN and cuBLAS use TF32 tensor cores")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    # Inter-op parallelism would add threads beyond --threads; a sequential model has no use for it.
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)

    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = args.tf32
        torch.backends.cudnn.allow_tf32 = args.tf32
    x_train, y_train = load_split(args.data_dir, "train", args.limit)
    x_test, y_test = load_split(args.data_dir, "t10k")
    x_train, y_train, x_test, y_test = (t.to(device) for t in (x_train, y_train, x_test, y_test))
    model = build_model(args.model).to(device)
    # Hyper-parameters come from the engine's own model file, so the two sides cannot drift.
    spec_path = args.model_json or os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "resources", "models", args.model + ".json")
    with open(spec_path) as f:
        spec = json.load(f)
    updater = spec["updater"]
    if updater["type"] not in ("nesterovs", "adam"):
        raise SystemExit(f"torch_peer: {spec_path}: expected a nesterovs or adam updater, got {updater['type']}")
    # L2 on weights only, like the engine (biases are not regularised).
    l2 = float(spec.get("l2", 0.0))
    weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
    biases = [p for n, p in model.named_parameters() if not n.endswith("weight")]
    groups = [{"params": weights, "weight_decay": l2}, {"params": biases, "weight_decay": 0.0}]
    if updater["type"] == "adam":  # DL4J's Adam is Kingma & Ba's, as torch's
        optimizer = torch.optim.Adam(groups, lr=float(updater["learning_rate"]),
                                     betas=(float(updater.get("beta1", 0.9)), float(updater.get("beta2", 0.999))),
                                     eps=float(updater.get("epsilon", 1e-8)))
    else:
        optimizer = torch.optim.SGD(groups, lr=float(updater["learning_rate"]),
                                    momentum=float(updater.get("momentum", 0.9)), nesterov=True)
    loss_fn = nn.CrossEntropyLoss()
    shuffle = torch.Generator().manual_seed(args.seed)

    n = x_train.shape[0]
    total_samples = 0
    total_train_s = 0.0
    accuracy = 0.0
    def now():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter()

    iteration = 0
    for epoch in range(args.epochs):
        start = now()
        timed_samples = n
        order = torch.randperm(n, generator=shuffle).to(device)
        loss_sum = 0.0
        for first in range(0, n, args.batch):
            if iteration == args.warmup and iteration > 0:
                start = now()  # the warm-up is over: time from here
                timed_samples = n - first
            iteration += 1
            idx = order[first:first + args.batch]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x_train[idx]), y_train[idx])
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * idx.shape[0]
        train_s = now() - start
        total_samples += timed_samples
        total_train_s += train_s
        accuracy = evaluate(model, x_test, y_test)
        emit({"epoch": epoch, "samples_per_s": timed_samples / train_s, "train_s": train_s,
              "loss": loss_sum / n, "accuracy": accuracy})

    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    emit({"peer": "pytorch", "model": args.model, "torch": torch.__version__,
          "device": str(device) if device.type == "cpu" else torch.cuda.get_device_name(device),
          "tf32": bool(args.tf32) and device.type == "cuda",
          "epochs": args.epochs, "batch": args.batch, "threads": args.threads,
          "train_samples": n, "samples_per_s": total_samples / total_train_s if total_train_s else 0.0,
          "accuracy": accuracy, "peak_rss_mb": peak_rss_mb})


if __name__ == "__main__":
    main()
