import argparse
import torch
from transformers import AutoModelForCausalLM
from datasets import load_dataset

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", type=str, default="configs/default.yaml")
    p.add_argument("--per_device_train_batch_size", type=int, default=8)
    p.add_argument("--max_seq_length", type=int, default=2048)
    p.add_argument("--max_steps", type=int, default=1000)
    args = p.parse_args()
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    ds = load_dataset("wikitext", "wikitext-2-raw-v1")
