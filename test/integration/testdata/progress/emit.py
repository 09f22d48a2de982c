#!/usr/bin/env python3
"""Print training progress the way a real framework does, at a known pace.

usage: emit.py FORMAT STEP_SECONDS STEPS

FORMAT is one of:
  hf          Hugging Face Trainer: setup lines, a tqdm bar refreshed with \\r,
              a loss dict every 10 steps
  hf-eval     the same, stopped halfway for an evaluation whose bar (drawn
              below the training bar, as tqdm does) is still running
  lightning   PyTorch Lightning: "Epoch 0: ...|" bar with metrics, \\r
  megatron    Megatron-LM iteration lines every 5 iterations
  nanogpt     nanoGPT "iter N: loss X, time Yms, mfu Z%" lines
  timestamps  Python logging lines with millisecond timestamps, no time field
  longline    one 50 MB line without a newline, then nanoGPT lines

Every printed rate or time is measured, as the frameworks do, so the true
step time is STEP_SECONDS plus a little overhead.
"""

import datetime
import sys
import time

BAR_WIDTH = 10


def tqdm_bar(desc, n, total, start, now, postfix=""):
    """Render one tqdm bar the way tqdm does for a non-terminal stream."""
    elapsed = now - start
    frac = n / total
    full = int(frac * BAR_WIDTH)
    bar = "█" * full + (" " * (BAR_WIDTH - full))
    if n and elapsed > 0:
        rate = n / elapsed
        remaining = (total - n) / rate
        rate_s = f"{rate:5.2f}it/s" if rate >= 1 else f"{1 / rate:5.2f}s/it"
    else:
        remaining, rate_s = None, "?it/s"
    rem = clock(remaining) if remaining is not None else "?"
    prefix = f"{desc}: " if desc else ""
    return f"{prefix}{frac * 100:3.0f}%|{bar}| {n}/{total} [{clock(elapsed)}<{rem}, {rate_s}{postfix}]"


def clock(seconds):
    seconds = int(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def out(text, end="\n"):
    sys.stdout.write(text + end)
    sys.stdout.flush()


def hf(step_s, steps, evaluate=False):
    total = 2 * steps if evaluate else steps
    out("***** Running training *****")
    out("  Num examples = 12,800")
    out("  Num Epochs = 1")
    out("  Instantaneous batch size per device = 8")
    out("  Total train batch size (w. parallel, distributed & accumulation) = 64")
    out("  Gradient Accumulation steps = 1")
    out(f"  Total optimization steps = {total}")
    start = time.time()
    out("\r" + tqdm_bar("", 0, total, start, start), end="")
    for i in range(1, steps + 1):
        time.sleep(step_s)
        out("\r" + tqdm_bar("", i, total, start, time.time()), end="")
        if i % 10 == 0:
            out("")
            out(f"{{'loss': {2.5 - i / total:.4f}, 'grad_norm': 1.234, 'learning_rate': 4.9e-05, 'epoch': {i / total:.2f}}}")
    if evaluate:
        # tqdm draws a bar at position 1 as: newline, bar, cursor up.
        # The evaluation runs at 1.5 s a batch, unlike training.
        eval_start, batches = time.time(), total - 1
        for i in range(0, batches + 1):
            out("\n\r" + tqdm_bar("", i, batches, eval_start, time.time()) + "\x1b[A", end="")
            time.sleep(1.5)


def lightning(step_s, steps):
    out("GPU available: True (cuda), used: True")
    out("  | Name  | Type | Params")
    out("0 | model | GPT  | 124 M")
    start = time.time()
    for i in range(1, steps + 1):
        time.sleep(step_s)
        post = f", v_num=0, train_loss={2.5 - i / steps:.3f}"
        out("\r" + tqdm_bar("Epoch 0", i, steps, start, time.time(), post), end="")


def megatron(step_s, steps):
    out("using world size: 1, data-parallel size: 1, tensor-model-parallel size: 1")
    out(f"  train_iters ..................................... {steps}")
    out("  global_batch_size ............................... 64")
    last = time.time()
    for i in range(1, steps + 1):
        time.sleep(step_s)
        if i % 5:
            continue
        now = time.time()
        ms = (now - last) * 1000 / 5
        last = now
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        out(
            f" [{stamp}] iteration {i:8d}/{steps:8d} | consumed samples: {i * 64:12d} |"
            f" elapsed time per iteration (ms): {ms:.1f} | learning rate: 3.000E-04 |"
            f" global batch size:    64 | lm loss: {7.5 - i / steps:.6E} | loss scale: 1.0 |"
            " grad norm: 1.234 | number of skipped iterations:   0 | number of nan iterations:   0 |"
        )


def nanogpt(step_s, steps):
    out("tokens per iteration will be: 491,520")
    last = time.time()
    for i in range(1, steps + 1):
        time.sleep(step_s)
        now = time.time()
        out(f"iter {i}: loss {3.5 - i / steps:.4f}, time {(now - last) * 1000:.2f}ms, mfu 12.34%")
        last = now


def timestamps(step_s, steps):
    for i in range(1, steps + 1):
        time.sleep(step_s)
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        out(f"{stamp} - INFO - train - step {i}/{steps} loss={2.5 - i / steps:.4f}")


def longline(step_s, steps):
    chunk = "x" * (1 << 20)
    for _ in range(50):
        sys.stdout.write(chunk)
    sys.stdout.flush()
    out("")
    nanogpt(step_s, steps)


def main():
    fmt, step_s, steps = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    if fmt == "hf":
        hf(step_s, steps)
    elif fmt == "hf-eval":
        hf(step_s, steps, evaluate=True)
    elif fmt == "lightning":
        lightning(step_s, steps)
    elif fmt == "megatron":
        megatron(step_s, steps)
    elif fmt == "nanogpt":
        nanogpt(step_s, steps)
    elif fmt == "timestamps":
        timestamps(step_s, steps)
    elif fmt == "longline":
        longline(step_s, steps)
    else:
        sys.exit(f"unknown format {fmt}")


if __name__ == "__main__":
    main()
