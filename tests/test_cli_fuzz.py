"""Fuzz test of the whole CLI (issue 19): generated argument vectors over every command and every input file
kind (``tests/cli_fuzz.py``), run in-process. Every vector must exit 0, 2 or 3 (does not fit) with no
traceback, within its time bound, with no NaN/inf/negative/null quantity in its JSON output, and a vector
holding a known-invalid value must exit 2. Bounded to about a minute on two cores (``max_examples``); ``benchmarks/fuzz_cli.py`` runs
thousands of vectors with another seed.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from cli_fuzz import COMMANDS, make_vector, run_vector

COMMANDS_RUN = [name for name in COMMANDS if name != "bench-run"]  # no real bench processes in CI


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@seed(19)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(data=st.data())
def test_every_vector_exits_0_or_2_truthfully(workdir, data):
    index = len(list(workdir.iterdir()))
    vector = make_vector(lambda values: data.draw(st.sampled_from(values)), workdir, index, COMMANDS_RUN)
    here = os.getcwd()
    os.chdir(workdir / f"v{index}")  # default output files (bench gemm) land in the vector's folder
    try:
        outcome = run_vector(vector, time_bound_s=60.0)
    finally:
        os.chdir(here)
    summary = (f"{' '.join(vector.args)} (known invalid: {vector.why}) -> exit {outcome.exit_code}: "
               f"{outcome.output[-400:]}")
    assert not outcome.hang, f"hang: {summary}"
    assert not outcome.traceback, f"traceback: {summary}"
    assert not outcome.bad_exit, f"exit other than 0/2/3, or 2 without a one-line error: {summary}"
    assert not outcome.bad_json, f"bad JSON values {outcome.bad_json}: {summary}"
    assert not outcome.silent_accept, f"silent accept: {summary}"
