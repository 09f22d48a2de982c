"""Real training runs whose logs exercise schedmate's metric tracker.

Each style trains a small GPT-like model on random tokens on the GPU with a
real framework's own progress output (HF Trainer, Lightning, Accelerate with
tqdm, a nanoGPT-style loop under torchrun) and measures its own step time
with wall-clock timestamps taken after each optimizer step. The truth goes to
--truth as JSON: the mean step time over the last half of the run, the last
step and the total.

    python3 train.py --style hf --steps 300 --truth hf.json > hf.log 2>&1
"""

import argparse
import json
import os
import time

import torch
from torch import nn


class StepClock:
    """Records a timestamp after every optimizer step."""

    def __init__(self):
        self.stamps = []

    def tick(self):
        torch.cuda.synchronize()
        self.stamps.append(time.perf_counter())

    def truth(self, style, total, slow_from=None):
        deltas = [b - a for a, b in zip(self.stamps, self.stamps[1:])]
        tail = deltas[len(deltas) // 2:] if slow_from is None else deltas[slow_from + 5:]
        return {
            "style": style,
            "step_time_s": sum(tail) / len(tail),
            "last_step_time_s": sum(deltas[-10:]) / 10,
            "step": len(self.stamps),
            "total_steps": total,
        }


class TinyGPT(nn.Module):
    """A decoder-only transformer big enough to keep an H100-class GPU busy for tens of ms a step."""

    def __init__(self, vocab=8192, dim=768, layers=8, heads=12, seq=512):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(1, seq, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(dim, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, input_ids, labels=None):
        x = self.tok(input_ids) + self.pos[:, : input_ids.shape[1]]
        x = self.blocks(x, mask=self.mask, is_causal=True)
        logits = self.head(x)
        if labels is None:
            return logits
        return nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())


class RandomTokens(torch.utils.data.Dataset):
    """Random token sequences; the label is the input shifted by one."""

    def __init__(self, n, seq=512, vocab=8192, delay=0.0):
        self.n, self.seq, self.vocab, self.delay = n, seq, vocab, delay

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        g = torch.Generator().manual_seed(i)
        ids = torch.randint(0, self.vocab, (self.seq + 1,), generator=g)
        return {"input_ids": ids[:-1], "labels": ids[1:]}


def run_hf(args, clock):
    from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments

    class Tick(TrainerCallback):
        def on_step_end(self, *_, **__):
            clock.tick()

    model = GPT2LMHeadModel(GPT2Config(vocab_size=8192, n_positions=512, n_embd=768, n_layer=8, n_head=12))
    evaluating = args.style == "hf-eval"
    accumulate = 4 if args.style == "hf-accum" else 1
    targs = TrainingArguments(
        output_dir=os.path.join(args.workdir, "hf-out"),
        max_steps=args.steps,
        per_device_train_batch_size=16 // accumulate,
        gradient_accumulation_steps=accumulate,
        per_device_eval_batch_size=16,
        learning_rate=3e-4,
        logging_steps=10,
        eval_strategy="steps" if evaluating else "no",
        eval_steps=args.steps // 3 if evaluating else None,
        save_strategy="no",
        report_to="none",
        bf16=True,
        dataloader_num_workers=2,
        disable_tqdm=False,
    )
    trainer = Trainer(
        model=model,
        args=targs,
        train_dataset=RandomTokens(args.steps * 16),
        eval_dataset=RandomTokens(16 * 40) if evaluating else None,
        callbacks=[Tick()],
    )
    trainer.train()


def run_lightning(args, clock):
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import TQDMProgressBar

    class Module(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = TinyGPT()

        def training_step(self, batch, _):
            loss = self.net(batch["input_ids"], batch["labels"])
            self.log("train_loss", loss, prog_bar=True)
            return loss

        def validation_step(self, batch, _):
            self.log("val_loss", self.net(batch["input_ids"], batch["labels"]), prog_bar=True)

        def on_train_batch_end(self, *_):
            clock.tick()

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=3e-4)

    epochs = 4 if args.style == "lightning-epochs" else 1
    loader = torch.utils.data.DataLoader(RandomTokens(args.steps * 16 // epochs), batch_size=16, num_workers=2)
    val = torch.utils.data.DataLoader(RandomTokens(16 * 20), batch_size=16, num_workers=2)
    trainer = pl.Trainer(
        max_steps=args.steps,
        accelerator="gpu",
        devices=1,
        precision="bf16-mixed",
        logger=False,
        enable_checkpointing=False,
        val_check_interval=args.steps // 2 if epochs == 1 else 1.0,
        log_every_n_steps=10,
        callbacks=[TQDMProgressBar()] if args.style != "lightning" else None,
    )
    trainer.fit(Module(), loader, val)


def run_accelerate(args, clock):
    from accelerate import Accelerator
    from tqdm.auto import tqdm

    acc = Accelerator(mixed_precision="bf16")
    model = TinyGPT()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = torch.utils.data.DataLoader(RandomTokens(args.steps * 16), batch_size=16, num_workers=2)
    model, opt, loader = acc.prepare(model, opt, loader)
    bar = tqdm(total=args.steps, desc="Training")
    for step, batch in enumerate(loader):
        loss = model(batch["input_ids"], batch["labels"])
        acc.backward(loss)
        opt.step()
        opt.zero_grad()
        clock.tick()
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.4f}")
        if step + 1 >= args.steps:
            break
    bar.close()


def run_nanogpt(args, clock):
    """A nanoGPT-style loop: its own "iter N: loss L, time T ms" lines, a slowdown when --slow-from is given."""
    device = "cuda"
    model = TinyGPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = RandomTokens(args.steps * 16)
    t0 = time.time()
    for it in range(args.steps):
        batch = torch.stack([data[it * 16 + j]["input_ids"] for j in range(16)]).to(device)
        labels = torch.stack([data[it * 16 + j]["labels"] for j in range(16)]).to(device)
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = model(batch, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if args.slow_from is not None and it >= args.slow_from:
            # A contended node: the input pipeline now takes 60 ms more a step.
            time.sleep(0.06)
        clock.tick()
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        if it % 10 == 0:
            print(f"iter {it}: loss {loss.item():.4f}, time {dt * 1000:.2f}ms, mfu {0.0:.2f}%", flush=True)


def run_pylogging(args, clock):
    """A custom loop reporting through Python logging with millisecond timestamps and no timings."""
    import logging

    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
    log = logging.getLogger("train")
    model = TinyGPT().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = torch.utils.data.DataLoader(RandomTokens(args.steps * 16), batch_size=16, num_workers=2)
    log.info("***** Running training *****  total steps = %d", args.steps)
    for step, batch in enumerate(loader, 1):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(batch["input_ids"].cuda(), batch["labels"].cuda())
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        clock.tick()
        if step % 10 == 0:
            log.info("step %d/%d | loss %.4f | lr %.2e", step, args.steps, loss.item(), 3e-4)


STYLES = {
    "hf-accum": run_hf,
    "lightning-tqdm": run_lightning,
    "lightning-epochs": run_lightning,
    "pylogging": run_pylogging,
    "hf": run_hf,
    "hf-eval": run_hf,
    "lightning": run_lightning,
    "accelerate": run_accelerate,
    "nanogpt": run_nanogpt,
}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--style", choices=sorted(STYLES), required=True)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--slow-from", type=int)
    p.add_argument("--truth", required=True)
    p.add_argument("--workdir", default="/tmp/realruns")
    args = p.parse_args()
    clock = StepClock()
    STYLES[args.style](args, clock)
    if int(os.environ.get("RANK", "0")) == 0:
        with open(args.truth, "w") as f:
            json.dump(clock.truth(args.style, args.steps, args.slow_from), f, indent=1)


if __name__ == "__main__":
    main()
