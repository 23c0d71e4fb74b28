"""Make ``eplb_public_outputs.npz``: the public EPLB's own outputs on seeded inputs.

Not part of the test suite (it needs torch and the public file). How it was run:
``eplb.py`` from github.com/deepseek-ai/EPLB at commit d52c72d5b2f2 (saved as ``eplb_public.py``
beside this script), torch 2.13.0 CPU, numpy 2.4; ``python make_eplb_fixture.py``. For every case
it stores the loads, the arguments, the outputs of the public entry point ``rebalance_experts``
(which casts the loads to float32) and of its policy function run on the float64 loads.
"""

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import eplb_public as eplb  # noqa: E402

CASES = [  # layers, experts, replicas, groups, nodes, gpus
    (2, 12, 16, 4, 2, 8), (3, 16, 16, 4, 2, 4), (4, 16, 24, 4, 4, 8), (2, 32, 48, 8, 2, 16),
    (5, 64, 80, 8, 4, 16), (3, 64, 64, 1, 1, 16), (2, 24, 32, 6, 4, 8),  # 6 % 4 -> global
    (4, 256, 288, 8, 4, 32), (4, 256, 320, 8, 8, 64), (3, 256, 256, 8, 4, 32),
    (2, 128, 160, 1, 1, 32), (6, 20, 30, 5, 5, 10), (58, 256, 320, 1, 1, 32),
]


def main():
    rng = np.random.default_rng(2025)
    out = {}
    for i, (L, E, P, G, Nn, N) in enumerate(CASES):
        # tie-free loads, exact in float32: a skewed spread plus distinct thousandths
        base = rng.pareto(1.5, (L, E)) + 0.05
        w = np.float32(np.round(base * 1000) + rng.permutation(E * L).reshape(L, E) * 1e-3)
        w = w.astype(np.float64)
        p2l, l2p, cnt = eplb.rebalance_experts(torch.tensor(w), P, G, Nn, N)
        out[f"case{i}_weight"] = w
        out[f"case{i}_args"] = np.array([P, G, Nn, N])
        out[f"case{i}_phy2log"] = p2l.numpy().astype(np.int32)
        out[f"case{i}_log2phy"] = l2p.numpy().astype(np.int32)
        out[f"case{i}_logcnt"] = cnt.numpy().astype(np.int32)
        g, n = (G, Nn) if G % Nn == 0 else (1, 1)  # the entry point's choice of policy
        p64, _, c64 = eplb.rebalance_experts_hierarchical(torch.tensor(w), P, g, n, N)
        out[f"case{i}_phy2log_f64"] = p64.numpy().astype(np.int32)
        out[f"case{i}_logcnt_f64"] = c64.numpy().astype(np.int32)
    np.savez_compressed(Path(__file__).parent / "eplb_public_outputs.npz", **out)


if __name__ == "__main__":
    main()
