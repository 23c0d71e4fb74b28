"""SimPy, the peer of the timeline engine in ``make bench``, simulates the same 1F1B iteration.

``benchmarks/_simpy_pipeline.py`` writes Megatron 1F1B idiomatically in SimPy (one process per
stage, stores for activations and gradients, a resource per CPU sender). Its op times must equal
:func:`uneven.schedulers.pipeline.simulate_pipeline` exactly, or the speed ratio in
``benchmarks/bench_simpy.py`` would compare two different models. Skipped without ``simpy``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from uneven.schedulers.pipeline import pipeline_schedule, simulate_pipeline

pytest.importorskip("simpy")

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "_simpy_pipeline.py"
_spec = importlib.util.spec_from_file_location("_simpy_pipeline", _PATH)
peer = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(peer)


def _both(p, m, tf, tb, delays, transfer, hol, warmups=None):
    kw = {} if warmups is None else {"warmups": warmups}
    r = simulate_pipeline(pipeline_schedule("1f1b", p, m, **kw), tf, tb,
                          delays=delays if p > 1 else 0.0,
                          transfer=transfer if p > 1 else 0.0, hol=hol)
    it, ops = peer.simpy_1f1b(p, m, list(tf), list(tb), list(delays), list(transfer), hol=hol,
                              warmups=warmups)
    comp = r.kind <= 1
    keys = zip(r.stage[comp].tolist(), r.kind[comp].tolist(), r.microbatch[comp].tolist(),
               strict=True)
    theirs = np.array([ops[key] for key in keys])
    return r, it, ops, theirs, comp


@pytest.mark.parametrize("p, m", [(1, 1), (1, 4), (2, 1), (3, 2), (4, 8), (5, 3), (8, 24)])
@pytest.mark.parametrize("hol", [False, True])
def test_simpy_peer_matches_the_engine_op_by_op(p, m, hol):
    rng = np.random.default_rng(100 * p + m + hol)
    tf = rng.uniform(0.5, 1.5, p)
    tb = rng.uniform(1.0, 3.0, p)
    delays = rng.uniform(0.0, 0.8, p - 1) * (rng.random(p - 1) < 0.5)
    transfer = rng.uniform(0.0, 0.3, p - 1)
    r, it, ops, theirs, comp = _both(p, m, tf, tb, delays, transfer, hol)
    assert len(ops) == comp.sum() == 2 * p * m
    assert it == r.iteration_time  # the same floats in the same order: bit for bit
    np.testing.assert_array_equal(theirs[:, 0], r.start[comp])
    np.testing.assert_array_equal(theirs[:, 1], r.finish[comp])
    # the same 1F1B order on every stage
    for s in range(p):
        mine = [o for o in r.order(s) if o[0] in "FB"]
        assert mine == [f"{'FB'[k]}{j}" for k, j in peer.one_f_one_b_order(p, m, s)]


def test_simpy_peer_closed_form_and_custom_warmups():
    # equal stages, no delay: (m + p - 1)(F + B)
    it, _ = peer.simpy_1f1b(4, 8, [1.0] * 4, [2.0] * 4)
    assert it == simulate_pipeline(pipeline_schedule("1f1b", 4, 8), 1.0, 2.0).iteration_time
    assert it == 33.0
    # more warm-ups than Megatron's, a slow link in the middle
    r, it, _, theirs, comp = _both(4, 10, [1.0, 1.2, 0.9, 1.1], [2.0, 2.1, 1.8, 2.2],
                                   [0.0, 1.5, 0.0], [0.1, 0.1, 0.1], False, warmups=[6, 5, 3, 1])
    assert it == r.iteration_time
    np.testing.assert_array_equal(theirs[:, 0], r.start[comp])
