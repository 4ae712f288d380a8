#!/usr/bin/python3
"""Turns the logs of bench/train_throughput.sh into one comparison table.

Reads, for each model, RESULTS_DIR/<model>/{engine.jsonl, engine.time, torch.jsonl}:
  engine.jsonl  thresher-engine's JSON lines (iteration, epoch_end, run_finished events)
  engine.time   `/usr/bin/time -v` report of the engine run (absent when time is missing)
  torch.jsonl   bench/torch_peer.py's JSON lines (per epoch, then the "peer" summary)

Engine samples/s: the mean of the iteration events' samples_per_s after the first 20 iterations
(the warm-up: primitive creation, first-touch page faults, caches). If the events lack
samples_per_s, total samples over summed iter_ms instead. A missing figure prints as "-".

Usage: summarize.py RESULTS_DIR MODEL... [--skip N] [--batch B]
"""
import argparse
import json
import os
import re
import sys

WARMUP_ITERATIONS = 20


def read_json_lines(path):
    """Yields the JSON objects in a file, skipping lines that are not JSON (log noise)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(record, dict):
                    yield record
    except FileNotFoundError:
        return


def engine_figures(path, skip=WARMUP_ITERATIONS, batch=64):
    iterations = []
    last_epoch = None
    finished = None
    for record in read_json_lines(path):
        event = record.get("event")
        if event == "iteration":
            iterations.append(record)
        elif event == "epoch_end":
            last_epoch = record
        elif event == "run_finished":
            finished = record

    samples_per_s = None
    measured = iterations[skip:] or iterations  # a run shorter than the warm-up: use what there is
    rates = [r["samples_per_s"] for r in measured if isinstance(r.get("samples_per_s"), (int, float))]
    if rates:
        samples_per_s = sum(rates) / len(rates)
    else:
        # Fall back on batch sizes over iteration times when the rate itself is not reported.
        samples = sum(r.get("batch", r.get("samples", batch)) for r in measured)
        ms = sum(r.get("iter_ms", 0.0) for r in measured)
        if samples and ms:
            samples_per_s = samples / (ms / 1000.0)

    status = finished.get("status") if finished else "no run_finished event"
    return {
        "samples_per_s": samples_per_s,
        "accuracy": last_epoch.get("accuracy") if last_epoch else None,
        "iterations": len(iterations),
        "status": status,
    }


def torch_figures(path):
    summary = None
    for record in read_json_lines(path):
        if record.get("peer") == "pytorch":
            summary = record
    if summary is None:
        return {"samples_per_s": None, "accuracy": None, "peak_rss_mb": None}
    return {k: summary.get(k) for k in ("samples_per_s", "accuracy", "peak_rss_mb")}


def peak_rss_mb(time_report_path):
    """Maximum resident set size from GNU time's -v report (kbytes), in MiB; without that report
    (no /usr/bin/time on the machine), the engine's own run_finished.peak_rss_mb beside it."""
    try:
        with open(time_report_path, encoding="utf-8", errors="replace") as f:
            match = re.search(r"Maximum resident set size \(kbytes\):\s*(\d+)", f.read())
        return int(match.group(1)) / 1024.0 if match else None
    except FileNotFoundError:
        pass
    events = os.path.join(os.path.dirname(time_report_path), "engine.jsonl")
    if not os.path.exists(events):
        return None
    for record in read_json_lines(events):
        if record.get("event") == "run_finished" and record.get("peak_rss_mb") is not None:
            return record["peak_rss_mb"]
    return None


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def main():
    parser = argparse.ArgumentParser(description="Summarise a train_throughput.sh run.")
    parser.add_argument("results_dir")
    parser.add_argument("models", nargs="+")
    parser.add_argument("--skip", type=int, default=WARMUP_ITERATIONS,
                        help="engine warm-up iterations left out of the mean (default 20)")
    parser.add_argument("--batch", type=int, default=64,
                        help="samples per iteration when the events do not say (default 64)")
    args = parser.parse_args()

    header = ["model", "engine samples/s", "torch samples/s", "ratio", "engine acc", "torch acc",
              "engine RSS MB", "torch RSS MB"]
    rows = []
    notes = []
    for model in args.models:
        base = f"{args.results_dir}/{model}"
        engine = engine_figures(f"{base}/engine.jsonl", args.skip, args.batch)
        peer = torch_figures(f"{base}/torch.jsonl")
        ratio = None
        if engine["samples_per_s"] and peer["samples_per_s"]:
            ratio = engine["samples_per_s"] / peer["samples_per_s"]
        rows.append([model, fmt(engine["samples_per_s"], ".1f"), fmt(peer["samples_per_s"], ".1f"),
                     fmt(ratio, ".2f"), fmt(engine["accuracy"], ".4f"), fmt(peer["accuracy"], ".4f"),
                     fmt(peak_rss_mb(f"{base}/engine.time"), ".1f"), fmt(peer["peak_rss_mb"], ".1f")])
        if engine["status"] != "ok":
            notes.append(f"{model}: engine run status: {engine['status']} "
                         f"({engine['iterations']} iteration events)")

    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    for r in rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print("ratio = engine / torch samples/s (above 1: the engine is faster)")
    for note in notes:
        print(note, file=sys.stderr)
    return 1 if notes else 0


if __name__ == "__main__":
    sys.exit(main())
