"""What the command line imports before it does any work: ``distcalc --help`` no command module, and
``distcalc analyze --help`` (the analyze command built, its options derived from the schema) none of the cost
model. Checked by module name in a fresh interpreter, not by timing (benchmarks/analyze_speed.py times it)."""

from __future__ import annotations

import json
import subprocess
import sys

#: Modules that belong to the physics or to a command's work, not to building options.
COST_MODEL = ("distcalc.analyze.core", "distcalc.analyze.report", "distcalc.analyze.options", "distcalc.compute",
              "distcalc.collective", "distcalc.placement", "distcalc.memory", "distcalc.calibration",
              "distcalc.model.loader", "distcalc.jobs.analyze", "distcalc.schedules", "distcalc.traffic")


def _loaded_after(code: str) -> set[str]:
    """The ``distcalc`` modules (and ``numpy`` when loaded) a fresh interpreter holds after running ``code``."""
    script = code + ("\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules "
                     "if m.startswith('distcalc') or m == 'numpy')))")
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out.strip().splitlines()[-1]))


def test_distcalc_help_imports_no_command_module():
    loaded = _loaded_after("from distcalc.cli import app\n"
                           "from typer.main import get_command\n"
                           "get_command(app).get_help(__import__('click').Context(get_command(app)))")
    assert not {m for m in loaded if m.endswith("_cmd")}
    assert not loaded & set(COST_MODEL)


def test_analyze_help_builds_its_options_without_the_cost_model():
    loaded = _loaded_after("from distcalc.cli import _module_commands\n"
                           "command = _module_commands('analyze_cmd')['analyze']\n"
                           "assert any(p.name == 'tp' for p in command.params)\n"
                           "command.get_help(__import__('click').Context(command))")
    assert "distcalc.cli.analyze_cmd" in loaded and "distcalc.parallel_schema" in loaded
    assert not loaded & set(COST_MODEL), sorted(loaded & set(COST_MODEL))


def test_analyze_help_imports_no_numpy():
    """The options' schema, enums and defaults live in modules without NumPy (the NumPy rules are
    :mod:`distcalc.parallel`'s, :mod:`distcalc.parallel_rules`', …), so the help does not pay for NumPy."""
    loaded = _loaded_after("from distcalc.cli import _module_commands\n"
                           "command = _module_commands('analyze_cmd')['analyze']\n"
                           "command.get_help(__import__('click').Context(command))")
    assert "numpy" not in loaded
    assert not {"distcalc.parallel", "distcalc.parallel_rules", "distcalc.variability",
                "distcalc.deepspeed_zero3", "distcalc.analyze.fsdp"} & loaded


def test_analyze_help_imports_no_renderer_and_builds_no_validator():
    """``distcalc analyze --help`` run as the console script does: no rich console or table (the report's
    renderer, :mod:`distcalc.cli.analyze_run`'s), no typer option adapter and no pydantic validator built
    (options left out or at their typed defaults need no conversion, :mod:`distcalc.cli.coercion`)."""
    script = ("import sys\nfrom distcalc.cli import main\nsys.argv = ['distcalc', 'analyze', '--help']\n"
              "try:\n    main()\nexcept SystemExit:\n    pass\n"
              "from distcalc.zero3_config import DeepSpeedZero3\n"
              "import json\nprint(json.dumps([sorted(m for m in ('rich.console', 'rich.table', 'typer._adapters', "
              "'distcalc.cli.analyze_run', 'distcalc.render.console') if m in sys.modules), "
              "DeepSpeedZero3.__pydantic_complete__]))")
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    loaded, validator_built = json.loads(out.strip().splitlines()[-1])
    assert loaded == [] and validator_built is False


def test_collection_paused_restores_the_collector_as_it_found_it():
    import gc

    from distcalc.cli.startup import collection_paused

    was = gc.isenabled()
    try:
        gc.enable()
        with collection_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()  # a caller that turned it off keeps it off
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
        gc.enable()
        try:
            with collection_paused():
                raise KeyError("inside")
        except KeyError:
            pass
        assert gc.isenabled()
    finally:
        (gc.enable if was else gc.disable)()


def test_only_the_console_script_freezes_what_it_imported():
    """Importing the command line (tests, the web server) leaves the collector on and freezes nothing; the
    console script's ``main`` freezes the imported objects and leaves the collector on for the command."""
    script = ("import gc, json, sys\nimport distcalc.cli\nfrom distcalc.cli import _module_commands\n"
              "_module_commands('analyze_cmd')\nimported = [gc.isenabled(), gc.get_freeze_count()]\n"
              "sys.argv = ['distcalc', 'analyze', '--help']\n"
              "try:\n    distcalc.cli.main()\nexcept SystemExit:\n    pass\n"
              "print(json.dumps(imported + [gc.isenabled(), gc.get_freeze_count()]))")
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout
    enabled, frozen, enabled_after_main, frozen_after_main = json.loads(out.strip().splitlines()[-1])
    assert enabled and frozen == 0
    assert enabled_after_main and frozen_after_main > 10_000


def test_a_collective_model_is_imported_when_a_run_asks_for_it():
    """NCCL's tuning model (constants, graph search, tuner) is a variant of the collective pricing that
    ``analyze.collective_models`` imports on first use: a default run never loads it, ``nccl`` does."""
    run = ("from distcalc.analyze import analyze, AnalyzeOptions\n"
           "from distcalc.parallel import ParallelConfig\n"
           "analyze('llama3-8b', 'dgx-h100', ParallelConfig(gpus=16, tp=2, pp=2), AnalyzeOptions({}))\n")
    nccl = ("distcalc.analyze.nccl_pricing", "distcalc.collective.nccl_tuner", "distcalc.collective.nccl_graph",
            "distcalc.collective.nccl_constants")
    assert not _loaded_after(run.format("")) & set(nccl)
    assert set(nccl) <= _loaded_after(run.format("collective_model='nccl'"))
