"""The printed reports of notebooks 04-07 in the zh-TW edition (issue 26).

A report is the text a notebook cell prints (``print(x.report)``). Under ``zh_TW`` it speaks
Chinese and keeps the library's numbers: the same numbers in the same order of lines, the same
number of lines, and, in a table, every number after the first column ends in the same display
column as in English (a CJK character is two columns wide; ``explorers._common.pad`` pads by
display width). Each case calls a report the way its notebook does.
"""

from __future__ import annotations

import re
import unicodedata

import pytest

from uneven import i18n

PROSE = "prose"  # a case's flag: the numbers are in sentences, their columns may move
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
NUMBER = re.compile(r"[-+]?\d+(?:[.,]\d+)*")


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _columns(line: str) -> list[int]:
    """Display columns where the numbers after a line's first gap of two or more spaces end
    (nothing for a line without such a gap: a sentence, not a table row)."""
    gap = re.search(r"\S {2,}", line)
    if gap is None:
        return []
    return [_width(line[:m.end()]) for m in NUMBER.finditer(line, gap.end())]


# ---- the cases, one block per notebook ------------------------------------------------------
# Each case: (id, a function of the explorer module that returns the report's text), and
# PROSE after them for a report of sentences after a padded label (no number columns).

def _nb04_cases():
    from uneven.parallel_volumes import INTERNAL_352B as shape
    from uneven.schedulers.moe_layer import ablation, layer_timeline

    def overlap(m):
        tp = m.tp_layer(shape).layer
        best = layer_timeline(shape, "sp_ep", inter_op=True, intra_op=True)
        return m.overlap_report(tp, layer_timeline(shape, "sp_ep"), best).report

    def scaling(m):
        cal = m.calibrated_layers(shape)
        return m.scaling_table(shape, cal.tp, cal.best)

    def mfu(m):
        cal = m.calibrated_layers(shape)
        return m.mfu_table(shape, cal.best, m.scaling_table(shape, cal.tp, cal.best).model).report

    return [
        ("tp_layer", lambda m: m.tp_layer(shape).report),
        ("layout_volumes", lambda m: m.layout_volumes(shape, 8).report),
        ("eq2_latency", lambda m: m.eq2_latency(shape, 8).report),
        ("leave_node", lambda m: m.leave_node(shape).report),
        ("hiding_curves", lambda m: m.hiding_curves().report),
        ("deepseek_hiding", lambda m: m.deepseek_hiding().report),
        ("tile_runs", lambda m: m.tile_runs(shape).report),
        ("overlap_report", overlap),
        ("ablation_report", lambda m: m.ablation_report(ablation(shape))),
        ("calibrated_layers", lambda m: m.calibrated_layers(shape).report),
        ("scaling_table", lambda m: scaling(m).report),
        ("ablation_report_cal", lambda m: m.ablation_report(m.calibrated_layers(shape).rows)),
        ("skewed_cluster", lambda m: m.skewed_cluster(shape, n_nodes=180, cap=1.1).report),
        ("memory_report", lambda m: m.memory_report(shape, pp=15, dp=2).report),
        ("mfu_table", mfu),
    ]


def _nb05_cases():
    # as notebook 05 calls them; the runs of many steps with fewer steps (each case under 2 s)
    from uneven.ep.decode import DecodeSetup

    setup = DecodeSetup()

    def step(m):
        return m.step_skew(setup)

    def nic_aware(m):
        return m.placement_loads(setup, step(m).load).placements["NIC-aware"]

    def layer(m):
        traffic = m.relay_step(setup, nic_aware(m), step(m).ids)
        return m.layer_report(nic_aware(m), traffic.direct, traffic.relay)

    return [
        ("step", lambda m: step(m).report),
        ("plans", lambda m: m.placement_loads(setup, step(m).load).report),
        ("spare", lambda m: m.replica_rows(setup, step(m).load).report),
        ("swaps", lambda m: m.swap_runs(setup, n_steps=50).report),
        ("step_traffic", lambda m: m.relay_step(setup, nic_aware(m), step(m).ids).report),
        ("layer_report", layer),
        ("m", lambda m: m.matched_ablation(n_steps=10).report),
        ("loo", lambda m: m.leave_one_out(DecodeSetup(tokens_per_gpu=19), n_steps=20).report),
        ("loo64", lambda m: m.leave_one_out(setup, n_steps=20).report),
        ("transport_table", lambda m: m.transport_table(DecodeSetup(tokens_per_gpu=19)).report),
        ("abl", lambda m: m.ablation_runs(setup, n_steps=20).report),
        ("stale_report", lambda m: m.stale_report(m.ablation_runs(setup, 3, start=100,
                                                                  n_steps=20))),
        ("sweep", lambda m: m.batch_sweep([16, 32, 64]).report),
        ("deepep_ll_check", lambda m: m.deepep_ll_check().report),
    ]


def _nb06_cases():
    from functools import lru_cache

    from uneven.ep.superpod import CoreCosts, die_superpod, superpod_traffic
    from uneven.topology import h800_cluster

    costs = CoreCosts()  # the library's default q is the fitted one (calibration().costs)
    us = 1e-6

    @lru_cache(maxsize=4)
    def traffic(ep):
        return superpod_traffic(ep, seed=0)

    def timelines(m):
        return m.die_timelines(traffic(64), costs, jitter=2 * us)

    return [
        ("latency_pins", lambda m: m.latency_pins(CoreCosts()).report),
        ("calibration", lambda m: m.calibration().report),
        ("write_costs", lambda m: m.write_costs(costs).report),
        ("split_plans", lambda m: m.split_plans(traffic(32), costs).report),
        ("timeline_report", lambda m: m.timeline_report(timelines(m)).report),
        ("block_table", lambda m: m.block_table(traffic(64), costs).report),
        ("ep_sweep", lambda m: m.ep_sweep(costs, (8, 16, 32, 64, 128, 256, 320), 2 * us,
                                          runs=50).report),
        ("tail_runs", lambda m: m.tail_runs(traffic(64), costs, n_steps=20).report),
        ("phase_table", lambda m: m.phase_table(costs).report),
        ("core_split", lambda m: m.core_split(traffic(64), costs,
                                              batches=(4, 16, 128, 512)).report),
        ("barrier_needed", lambda m: m.barrier_needed(costs, 2 * us).report),
        # one barrier cost of the notebook's three (each fit scans q = 1..32): both jitters,
        # the second at the scan's edge
        ("fit_sensitivity", lambda m: m.fit_sensitivity(barrier_us=(30,)).report),
        ("barrier_tail", lambda m: m.barrier_tail(traffic(64), costs, n_steps=20).report),
        ("tpot_runs", lambda m: m.tpot_runs(traffic(64), costs, 2 * us, (0.0, 2.0),
                                            n_steps=20).report),
        # the topology's description (uneven._topology_text): cell 9 prints the superpod's;
        # notebooks 03 and 08 print clusters'
        ("pod.describe", lambda m: die_superpod(20).describe(), PROSE),
        ("cluster.describe", lambda m: h800_cluster(4).describe(), PROSE),
    ]


def _nb07_cases():
    from functools import cache

    import numpy as np

    from uneven.counterfactuals import compute_unit_tax
    from uneven.ep.fabrics import dispatch_on_fabrics
    from uneven.papers import evidence_rows
    from uneven.trace.kineto import read_kineto, sample_kineto_traces
    from uneven.unevenness import PAPER_KEYS, slow_piece

    ms, us = 1e-3, 1e-6
    ns = np.unique(np.round(np.geomspace(1, 10_000, 40)).astype(int))

    @cache
    def trans(m):  # the transport table: data only, the same in both languages
        return m.policy_tables().trans

    def kineto(m):
        trace = read_kineto(sample_kineto_traces(n_ranks=2, n_layers=4, rank_speed=[1.0, 1.05]))
        return m.kineto_report(trace.replay(), trace.scale(1.5, category="communication", rank=0),
                               trace.delay_comm(200 * us, rank=0))

    return [
        ("policy_tables", lambda m: m.policy_tables().report),
        ("max_gaps", lambda m: m.max_gaps(ns).report),
        ("knob_report", lambda m: m.knob_report(), PROSE),
        ("slow_pieces_report", lambda m: m.slow_pieces_report(
            {key: slow_piece(key, 0.5) for key in PAPER_KEYS}).report),
        ("network_fixes", lambda m: m.network_fixes(60 * ms).report),
        ("fabrics_report", lambda m: m.fabrics_report(dispatch_on_fabrics())),
        ("overlap_gains", lambda m: m.overlap_gains(trans(m)).report),
        ("tax_report", lambda m: m.tax_report(compute_unit_tax())),
        ("evidence_counts", lambda m: m.evidence_counts(evidence_rows()).report),
        ("kineto_report", kineto),
    ]


# ---- the test -------------------------------------------------------------------------------

CASES = [(module, name, make, bool(prose)) for module, cases in (
    ("nb04", _nb04_cases()), ("nb05", _nb05_cases()), ("nb06", _nb06_cases()),
    ("nb07", _nb07_cases())) for name, make, *prose in cases]


@pytest.fixture
def language():
    """Set a language for one test; back to $UNEVEN_LANG afterwards."""
    yield i18n.set_language
    i18n.set_language(None)


@pytest.mark.parametrize(("module", "name", "make", "prose"), CASES,
                         ids=[f"{m}.{n}" for m, n, _, _ in CASES])
def test_a_printed_report_speaks_chinese_with_the_same_numbers_and_columns(
        module, name, make, prose, language):
    import importlib

    explorer = importlib.import_module(f"uneven.explorers.{module}")
    language("en")
    en = make(explorer)
    language("zh_TW")
    zh = make(explorer)
    assert not CJK.search(en), f"{module}.{name}: Chinese in the English report"
    assert CJK.search(zh), f"{module}.{name}: no Chinese in the zh-TW report:\n{zh}"
    en_lines, zh_lines = en.splitlines(), zh.splitlines()
    assert len(en_lines) == len(zh_lines), f"{module}.{name}: lines differ:\n{en}\n---\n{zh}"
    for a, b in zip(en_lines, zh_lines, strict=True):
        assert sorted(NUMBER.findall(a)) == sorted(NUMBER.findall(b)), (
            f"{module}.{name}: the numbers differ\n  en: {a}\n  zh: {b}")
        if _columns(a) and not prose:
            assert _columns(a) == _columns(b), (
                f"{module}.{name}: the columns do not line up\n  en: {a}\n  zh: {b}")
