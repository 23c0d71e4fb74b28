"""Quantities at the boundary (uneven.quantities): strings with units and pint quantities on SI
parameters, and a warning for a plain number that is probably a unit slip."""

from __future__ import annotations

import warnings

import numpy as np
import pint
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uneven._validate import as_float_array, check_real
from uneven.quantities import UnitWarning, format_quantity, plausible, to_unit
from uneven.schedulers.pipeline import pipeline_schedule, simulate_pipeline
from uneven.topology import cluster

UREG = pint.UnitRegistry()


@pytest.mark.parametrize("text, unit, want", [
    ("400 Gb/s", "bytes/s", 50e9), ("400 Gbps", "bytes/s", 50e9), ("50 GB/s", "bytes/s", 50e9),
    ("1.6 Tb/s", "bytes/s", 200e9), ("25 GBps", "bytes/s", 25e9),
    ("10 ms", "s", 0.01), ("2 us", "s", 2e-6), ("3 µs", "s", 3e-6), ("1.5 ns", "s", 1.5e-9),
    ("7 KB", "bytes", 7000.0), ("7 kB", "bytes", 7000.0), ("1.5 GiB", "bytes", 1.5 * 2**30),
    ("4 KiB", "bytes", 4096.0), ("1 Gb", "bytes", 1.25e8), ("10 ms", "ms", 10.0),
    ("400 Gb/s", "Gb/s", 400.0), ("50 GB/s", "GB/s", 50.0),
])
def test_strings_with_units_convert_to_the_parameters_unit(text, unit, want):
    assert to_unit("x", text, unit) == pytest.approx(want, rel=1e-12)
    assert check_real("x", text, unit=unit) == pytest.approx(want, rel=1e-12)


def test_pint_quantities_of_any_registry_convert():
    other = pint.UnitRegistry()
    assert check_real("t", UREG.Quantity(10, "ms"), unit="s") == pytest.approx(0.01)
    assert check_real("bw", other.Quantity(400, "Gbit/s"), unit="bytes/s") == pytest.approx(50e9)
    arr = as_float_array("t", UREG.Quantity(np.array([1.0, 2.0]), "ms"), unit="s")
    assert arr.tolist() == pytest.approx([1e-3, 2e-3])
    assert as_float_array("t", ["1 ms", "2 ms"], unit="s").tolist() == pytest.approx([1e-3, 2e-3])


@pytest.mark.parametrize("value, unit, match", [
    ("10 ms", "bytes/s", "bandwidth in bytes/s"), ("400 Gb/s", "s", "time in s"),
    ("5", "s", "needs a unit"), ("fast", "s", "time in s"), ("10 parsecs", "bytes", "size"),
    ("x" * 300, "s", "time"), ("10 ms", "tokens", "plain number"),
])
def test_a_wrong_quantity_is_refused_naming_the_parameter(value, unit, match):
    with pytest.raises(ValueError, match=match) as err:
        to_unit("delay", value, unit)
    assert str(err.value).startswith("delay")


@settings(max_examples=80, deadline=None)
@given(st.floats(1e-6, 1e6), st.sampled_from([("ms", 1e-3), ("us", 1e-6), ("s", 1.0),
                                              ("ns", 1e-9)]))
def test_any_time_string_is_its_number_times_its_prefix(v, pair):
    name, factor = pair
    assert to_unit("t", f"{v!r} {name}", "s") == pytest.approx(v * factor, rel=1e-12)


@settings(max_examples=80, deadline=None)
@given(st.floats(1e-3, 1e4), st.sampled_from([("Gb/s", 1e9 / 8), ("GB/s", 1e9),
                                              ("Mb/s", 1e6 / 8), ("TB/s", 1e12)]))
def test_any_bandwidth_string_is_its_number_times_its_prefix(v, pair):
    name, factor = pair
    assert to_unit("bw", f"{v!r} {name}", "bytes/s") == pytest.approx(v * factor, rel=1e-12)


def test_the_public_api_takes_strings_and_gives_the_same_answer():
    sched = pipeline_schedule("1f1b", 4, 8)
    plain = simulate_pipeline(sched, 0.01, 0.02, delays=0.005).iteration_time
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnitWarning)
        text = simulate_pipeline(sched, "10 ms", "20 ms", delays="5 ms").iteration_time
        q = simulate_pipeline(sched, UREG.Quantity(10, "ms"), UREG.Quantity(0.02, "s"),
                              delays=UREG.Quantity(5000, "us")).iteration_time
    assert text == pytest.approx(plain) and q == pytest.approx(plain)
    a = cluster(2, nvlink_bw="400 GB/s", nic_bw="400 Gb/s")
    b = cluster(2, nvlink_bw=400e9, nic_bw=50e9)
    assert np.array_equal(a.capacity, b.capacity)


def test_a_slip_warns_naming_the_parameter_and_the_likely_meaning():
    with pytest.warns(UnitWarning, match=r"nic_bw=400 B/s .* '400 Gb/s'"):
        cluster(2, nvlink_bw=400e9, nic_bw=400)
    with pytest.warns(UnitWarning, match=r"nic_bw=4e\+11 B/s is above any NIC.*bits"):
        cluster(2, nvlink_bw=400e9, nic_bw=400e9)
    with pytest.warns(UnitWarning, match=r"t_f=10 s .* one op .* '10 ms'"):
        simulate_pipeline(pipeline_schedule("1f1b", 4, 8), 10, 0.02)


def test_sensible_numbers_and_explicit_units_never_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnitWarning)
        cluster(2, nvlink_bw=400e9, nic_bw=50e9)
        cluster(2, nvlink_bw=400e9, nic_bw="400 B/s")  # said explicitly: taken as meant
        simulate_pipeline(pipeline_schedule("1f1b", 4, 8), 0.01, 0.02, delays=0.0)


def test_only_numbers_the_caller_passed_warn():
    # the library's own intermediate values with a unit never warn, whatever their size
    def library_like(x):
        return check_real("t_f", x, unit="s")

    with warnings.catch_warnings():
        warnings.simplefilter("error", UnitWarning)
        library_like(10.0)  # called from here, not from a library function taking t_f


def test_plausible_ranges():
    assert plausible("nic_bw", 50e9, "bytes/s") and not plausible("nic_bw", 400e9, "bytes/s")
    assert plausible("nvlink_bw", 900e9, "bytes/s")
    assert plausible("t_f", 0.05, "s") and not plausible("t_f", 10.0, "s")
    assert plausible("horizon", 50.0, "s") and not plausible("horizon", 500.0, "s")
    assert plausible("t_f", 0.0, "s") and plausible("tokens", 1e30, "tokens")
    assert plausible("delay_ms", 10.0, "ms")
    assert plausible("sizes", np.array([0.0, 1e3, np.nan]), "bytes")


def test_format_quantity_picks_a_readable_prefix():
    assert format_quantity(0.0125, "s") == "12.5 ms"
    assert format_quantity(2.5e-6, "s") == "2.5 µs"
    assert format_quantity(5e10, "bytes/s") == "50 GB/s"
    assert format_quantity(7e3, "bytes") == "7 kB"
    assert format_quantity(3.0, "tokens") == "3 tokens"
