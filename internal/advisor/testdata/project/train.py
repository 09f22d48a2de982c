import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--per_device_train_batch_size", type=int, default=32)
