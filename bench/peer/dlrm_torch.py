"""dlrm_torch.py trains graphs/no-cache.yaml's DLRM in PyTorch and prints
the median step time and its phases as one JSON line.

The model is the dlrm plugin's: bottom MLP with a ReLU after every layer,
sum-pooled EmbeddingBags (sparse gradients), DLRM's dot interaction (the
strictly lower triangle, the bottom output first), a top MLP with no ReLU
after its last layer, BCE with logits; SGD at the dense and the embedding
learning rates. Indices follow a Zipf(s) law over the rows like flowrun's
synthetic dataset. All batches are generated before the clock starts, so
data generation is outside the timed step, as flowrun's train stage
excludes its load stage.

Phases: gather (the EmbeddingBags' forward), dense (the MLPs and the
interaction, forward and backward, and the bags' backward, which only
builds the sparse gradient), update (optimizer.step: the dense SGD and the
sparse scatter).
"""
import argparse
import json
import statistics
import time

import numpy as np
import torch
from torch import nn


def mlp(widths, last_relu):
    layers = []
    for i in range(1, len(widths)):
        layers.append(nn.Linear(widths[i - 1], widths[i]))
        if i < len(widths) - 1 or last_relu:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.bags = nn.ModuleList(
            nn.EmbeddingBag(a.rows, a.dim, mode="sum", sparse=True) for _ in range(a.tables))
        self.bottom = mlp([a.dense] + a.bottom, True)
        pairs = (a.tables + 1) * a.tables // 2
        self.top = mlp([a.dim + pairs] + a.top, False)
        li, lj = torch.tril_indices(a.tables + 1, a.tables + 1, offset=-1)
        self.li, self.lj = li, lj

    def interact(self, x, pooled):
        v = torch.stack([x] + pooled, dim=1)  # [B][T+1][d]
        z = torch.bmm(v, v.transpose(1, 2))
        return torch.cat([x, z[:, self.li, self.lj]], dim=1)


def zipf_cdf(rows, s):
    cdf = np.cumsum(1.0 / np.arange(1, rows + 1) ** s)
    return cdf / cdf[-1]


def zipf_indices(rng, cdf, n):
    return np.minimum(np.searchsorted(cdf, rng.random(n)), len(cdf) - 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--tables", type=int, default=8)
    p.add_argument("--rows", type=int, default=500000)
    p.add_argument("--dim", type=int, default=16)
    p.add_argument("--lookups", type=int, default=8)
    p.add_argument("--dense", type=int, default=13)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--batches", type=int, default=50)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--bottom", default="64,32,16")
    p.add_argument("--top", default="128,128,64,32,1")
    p.add_argument("--lr", type=float, default=0.2)
    p.add_argument("--emb-lr", type=float, default=10.0)
    p.add_argument("--zipf", type=float, default=1.05)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    a.bottom = [int(w) for w in a.bottom.split(",")]
    a.top = [int(w) for w in a.top.split(",")]
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    model = DLRM(a)
    dense_opt = torch.optim.SGD(list(model.bottom.parameters()) + list(model.top.parameters()), lr=a.lr)
    emb_opt = torch.optim.SGD(model.bags.parameters(), lr=a.emb_lr)
    loss_fn = nn.BCEWithLogitsLoss()
    B, L = a.batch, a.lookups
    offsets = torch.arange(0, B * L, L)
    cdf = zipf_cdf(a.rows, a.zipf)
    data = []
    for _ in range(a.batches + a.warmup):
        x = torch.from_numpy(rng.standard_normal((B, a.dense), dtype=np.float32))
        idx = [torch.from_numpy(zipf_indices(rng, cdf, B * L)) for _ in range(a.tables)]
        y = torch.from_numpy((rng.random(B) < 0.5).astype(np.float32))
        data.append((x, idx, y))
    step, gather, dense, update, losses = [], [], [], [], []
    for i, (x, idx, y) in enumerate(data):
        t0 = time.perf_counter()
        pooled = [bag(ix, offsets) for bag, ix in zip(model.bags, idx)]
        t1 = time.perf_counter()
        logit = model.top(model.interact(model.bottom(x), pooled)).squeeze(1)
        loss = loss_fn(logit, y)
        dense_opt.zero_grad(set_to_none=True)
        emb_opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        dense_opt.step()
        emb_opt.step()
        t3 = time.perf_counter()
        losses.append(loss.item())
        if i >= a.warmup:
            step.append(t3 - t0)
            gather.append(t1 - t0)
            dense.append(t2 - t1)
            update.append(t3 - t2)
    ms = lambda xs: round(statistics.median(xs) * 1e3, 3)
    print(json.dumps({"step_ms": ms(step), "gather_ms": ms(gather), "dense_ms": ms(dense),
                      "update_ms": ms(update), "loss_first": losses[0], "loss_last": losses[-1],
                      "threads": a.threads, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
