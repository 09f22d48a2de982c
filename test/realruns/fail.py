"""Real failing training runs whose logs exercise schedmate's failure handler.

Each kind trains TinyGPT for a few logged iterations and then fails the way
real jobs do, through the real library code path (PyTorch, CUDA, NCCL,
DataLoader, torchrun), so the log holds the genuine error text:

    oom             a batch far larger than the GPU (CUDA out of memory)
    device-assert   a label outside the vocabulary (CUDA device-side assert)
    dup-gpu         two torchrun ranks pinned to cuda:0 (NCCL invalid usage)
    worker-killed   a DataLoader worker ended by SIGKILL, as the host OOM killer does
    missing-data    a dataset path that does not exist
    rank-keyerror   rank 1 of two (gloo) raises a KeyError mid-run under torchrun
    disk-full       a checkpoint written to a full filesystem (--ckpt-dir on a small tmpfs)
    shm-full        DataLoader workers passing batches through a /dev/shm that is full
    store-timeout   rank 1 of two connecting to a MASTER_ADDR that never answers

    python3 fail.py --kind oom > oom.log 2>&1
"""

import argparse
import datetime
import os
import signal

import torch
import torch.distributed as dist

from train import RandomTokens, TinyGPT


class KillingTokens(RandomTokens):
    """Random tokens whose worker process is killed at item kill_at."""

    kill_at = 16 * 25

    def __getitem__(self, i):
        if i == self.kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().__getitem__(i)


class LargeTokens(RandomTokens):
    """Random tokens padded with a large float tensor, so that each batch crosses shared memory."""

    def __getitem__(self, i):
        item = super().__getitem__(i)
        item["features"] = torch.rand(1024, 1024)
        return item


def loop(kind, device, steps=60, ckpt_dir=None):
    model = TinyGPT().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    data = {"worker-killed": KillingTokens, "shm-full": LargeTokens}.get(kind, RandomTokens)(steps * 16)
    loader = torch.utils.data.DataLoader(data, batch_size=16, num_workers=2)
    rank = dist.get_rank() if dist.is_initialized() else 0
    for it, batch in enumerate(loader):
        ids, labels = batch["input_ids"].to(device), batch["labels"].to(device)
        if kind == "oom" and it == 30:
            ids = ids.repeat(4096, 1)
            labels = labels.repeat(4096, 1)
        if kind == "device-assert" and it == 30:
            labels[0, 7] = 9000  # the vocabulary has 8192 entries
        if kind == "rank-keyerror" and it == 30 and rank == 1:
            config = {"lr": 3e-4}
            print("warmup done, switching schedule", flush=True)
            _ = config["lr_schedule"]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(ids, labels)
        loss.backward()
        if dist.is_initialized():
            dist.all_reduce(loss.detach())
        opt.step()
        opt.zero_grad(set_to_none=True)
        if it % 10 == 0:
            print(f"iter {it}: loss {loss.item():.4f}", flush=True)
        if kind == "disk-full" and it == 20:
            path = os.path.join(ckpt_dir, f"ckpt_{it}.pt")
            print(f"saving checkpoint to {path}", flush=True)
            torch.save({"model": model.state_dict(), "optim": opt.state_dict()}, path)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", required=True)
    p.add_argument("--ckpt-dir", default="/tmp")
    args = p.parse_args()
    if args.kind == "missing-data":
        root = "/datasets/imagenet-1k/train"
        print(f"loading dataset from {root}", flush=True)
        os.listdir(root)
    elif args.kind == "dup-gpu":
        dist.init_process_group("nccl")
        torch.cuda.set_device(0)
        loop(args.kind, "cuda:0")
    elif args.kind == "store-timeout":
        print(f"rank {os.environ['RANK']}: joining {os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
        dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=20))
    elif args.kind == "rank-keyerror":
        dist.init_process_group("gloo")
        loop(args.kind, "cuda", steps=40)
    else:
        loop(args.kind, "cuda", ckpt_dir=args.ckpt_dir)


if __name__ == "__main__":
    main()
