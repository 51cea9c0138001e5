"""The page in a real headless Chromium: load, change the layout, see numbers and charts equal the CLI's,
trigger a validation error, run a small search and load a point, export and re-run the YAML with the CLI.
Screenshots go to build/screenshots/."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .cli_json import cli, runner

pytestmark = pytest.mark.xdist_group("web")

# The page's defaults (the CLI's built-in example, every field explicit).
PAGE_DEFAULTS = {"model": "llama3-70b", "cluster": "dgx-h100", "gpus": 64, "tp": 8, "pp": 4, "cp": 1, "ep": 1,
                 "vpp": 5, "zero": 0, "micro_batch": 1, "global_batch": 128, "seq_len": 8192, "recompute": "none",
                 "dtype": "bf16", "distributed_optimizer": True, "sequence_parallel": True, "flash_attention": True,
                 "account_for_embedding_and_loss": False}
MEMORY_ONLY_DROPPED = ("cluster",)


def wait_for(condition, timeout_s: float = 20.0, what: str = "condition"):
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    start = time.perf_counter()
    while time.perf_counter() - start < timeout_s:
        try:
            value = condition()
        except (StaleElementReferenceException, NoSuchElementException):
            value = None  # the page re-rendered the element between finding and reading it: poll again
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def validity(browser) -> tuple[str, str]:
    box = browser.find_element("id", "validity")
    return box.get_attribute("class"), box.text


def settled(browser) -> bool:
    classes, _ = validity(browser)
    return "busy" not in classes and ("ok" in classes or "error" in classes)


def page_numbers(browser) -> dict:
    """Headline values and chart data as the page holds them (data attributes carry the exact numbers)."""
    value = lambda i: float(browser.find_element("id", i).get_attribute("data-value"))  # noqa: E731
    stages = browser.find_elements("css selector", "#chart-memory g.stage")
    components = browser.find_elements("css selector", "#chart-breakdown g.component")
    return {"step_time_s": value("m-step"), "mfu": value("m-mfu"), "memory": value("m-memory"),
            "stage_totals": [float(g.get_attribute("data-total")) for g in stages],
            "stage_segment_sums": [sum(float(r.get_attribute("data-bytes"))
                                       for r in g.find_elements("css selector", "rect[data-segment]")) for g in stages],
            "breakdown": {g.get_attribute("data-key"): float(g.get_attribute("data-seconds")) for g in components},
            "comm_rows": len(browser.find_elements("css selector", "#table-comm tr[data-exposed]")),
            "timeline_ops": len(browser.find_elements("css selector", "#chart-timeline rect.op")),
            "busbw_series": len(browser.find_elements("css selector", "#chart-busbw polyline.series"))}


def assert_page_equals_cli(browser, request: dict) -> None:
    numbers = page_numbers(browser)
    code, analyze, stderr = cli("analyze", request)
    assert code == 0, stderr
    memory_request = {k: v for k, v in request.items() if k not in MEMORY_ONLY_DROPPED}
    code, memory, stderr = cli("memory", {**memory_request, "gpu": analyze["cluster"]["gpu"]})
    assert code == 0, stderr
    assert numbers["step_time_s"] == analyze["step_time_s"] and numbers["mfu"] == analyze["mfu"]
    assert numbers["memory"] == analyze["memory"]["total_bytes"]
    assert numbers["stage_totals"] == [s["total_bytes"] for s in memory["memory"]["stages"]]
    assert numbers["stage_segment_sums"] == pytest.approx(numbers["stage_totals"], rel=1e-9)  # no line missing
    assert numbers["breakdown"] == {k: v for k, v in analyze["time_breakdown"].items()
                                    if v > 0 and k not in ("total_s",) and not k.endswith("_on_link_s")}
    assert numbers["comm_rows"] == len(analyze["communication"])
    assert numbers["timeline_ops"] > 0 and numbers["busbw_series"] > 0


def set_field(browser, name: str, value: str) -> None:
    element = browser.find_element("id", f"f-{name}")
    if element.tag_name == "select":
        from selenium.webdriver.support.ui import Select

        Select(element).select_by_visible_text(value)
    else:
        element.clear()
        element.send_keys(value)


def reload(browser, url: str) -> None:
    browser.get(url)
    wait_for(lambda: settled(browser) and browser.find_elements("id", "m-step"), what="first result")


def test_page_loads_and_equals_the_cli(server, browser, shoot):
    reload(browser, server + "/")
    assert validity(browser)[1] == "valid layout"
    wait_for(lambda: page_numbers(browser)["busbw_series"], what="busbw chart")
    assert_page_equals_cli(browser, PAGE_DEFAULTS)
    shoot("01-calculator-default")
    # every script, style and API call the page made went to its own server (no CDN, nothing outside)
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert fetched and all(name.startswith(server + "/") for name in fetched), fetched


def test_api_docs_page_lists_every_route(server, browser):
    browser.get(server + "/docs")
    text = wait_for(lambda: "POST /api/analyze" in browser.page_source and browser.find_element("id", "docs").text,
                    what="docs")
    for route in ("GET /api/presets", "/api/memory", "/api/search", "/api/collective", "/api/simulate"):
        assert route in text
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert all(name.startswith(server + "/") for name in fetched), fetched


def test_changing_the_layout_updates_numbers_charts_and_url(server, browser, shoot):
    reload(browser, server + "/")
    before = page_numbers(browser)
    set_field(browser, "pp", "8")
    set_field(browser, "recompute", "selective")
    wait_for(lambda: "pp=8" in browser.current_url and settled(browser)
             and page_numbers(browser)["step_time_s"] != before["step_time_s"], what="recompute after pp=8")
    wait_for(lambda: len(page_numbers(browser)["stage_totals"]) == 8, what="8 memory bars")
    assert_page_equals_cli(browser, {**PAGE_DEFAULTS, "pp": 8, "recompute": "selective"})
    shoot("02-calculator-pp8-selective")
    # the URL holds the state: a fresh load of it shows the same numbers
    numbers = page_numbers(browser)
    reload(browser, browser.current_url)
    assert browser.find_element("id", "f-pp").get_attribute("value") == "8"
    assert page_numbers(browser)["step_time_s"] == numbers["step_time_s"]


def test_invalid_layout_shows_the_cli_message(server, browser, shoot):
    reload(browser, server + "/")
    set_field(browser, "tp", "3")
    wait_for(lambda: "error" in validity(browser)[0], what="validation error")
    code, _, stderr = cli("analyze", {**PAGE_DEFAULTS, "tp": 3})
    assert code == 2 and validity(browser)[1].startswith(stderr)
    marked = {e.get_attribute("name") for e in browser.find_elements("css selector", "#layout .invalid")}
    assert marked == {"gpus", "tp", "pp", "cp"}  # the factors the message names
    assert "stale" in browser.find_element("id", "results").get_attribute("class")
    shoot("03-calculator-invalid-tp3")


def test_uploaded_config_json(server, browser):
    reload(browser, server + "/")
    path = Path("tests/fixtures/hf/meta-llama-3-8b.json").resolve()
    set_field(browser, "tp", "2")
    set_field(browser, "pp", "1")
    set_field(browser, "vpp", "1")
    wait_for(lambda: settled(browser) and "valid" in validity(browser)[1], what="layout for 8B")
    browser.find_element("id", "f-upload").send_keys(str(path))
    wait_for(lambda: "meta-llama-3-8b" in browser.find_element("id", "headline").text, what="uploaded model")
    code, analyze, _ = cli("analyze", {**PAGE_DEFAULTS, "model": str(path), "tp": 2, "pp": 1, "vpp": 1})
    assert code == 0
    # the page may re-render the result after the upload: read it until it is the CLI's number (exactly)
    wait_for(lambda: float(browser.find_element("id", "m-step").get_attribute("data-value")) == analyze["step_time_s"],
             what=f"page step time == CLI {analyze['step_time_s']!r}")


def test_search_then_click_a_point_loads_it(server, browser, shoot):
    reload(browser, server + "/")
    browser.find_element("id", "tab-search").click()
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "s-model")).select_by_visible_text("llama3-8b")
    for name, value in (("gpus", "8"), ("global_batch", "16")):
        field = browser.find_element("id", f"s-{name}")
        field.clear()
        field.send_keys(value)
    browser.find_element("id", "search-run").click()
    points = wait_for(lambda: browser.find_elements("css selector", "#chart-pareto circle.point"), what="Pareto")
    code, expected, _ = cli("search", {"model": "llama3-8b", "cluster": "dgx-a100", "gpus": "8", "global_batch": 16,
                                       "seq_len": 2048, "headroom": 0.05, "top": 10})
    assert code == 0 and len(points) == len(expected["pareto"])
    shoot("04-search-pareto")
    chosen = expected["pareto"][-1]
    points[-1].click()
    wait_for(lambda: browser.find_element("id", "pane-calc").is_displayed() and settled(browser), what="loaded")
    for key in ("tp", "pp", "micro_batch"):
        assert browser.find_element("id", f"f-{key}").get_attribute("value") == str(chosen[key])
    assert f"tp={chosen['tp']}" in browser.current_url or chosen["tp"] == 8


def test_export_json_csv_yaml_and_rerun_with_the_cli(server, browser, shoot, tmp_path):
    browser.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(tmp_path)})
    reload(browser, server + "/?tp=4&pp=2&vpp=1&recompute=full")
    step = float(browser.find_element("id", "m-step").get_attribute("data-value"))
    browser.find_element("id", "export-json").click()
    # JavaScript writes 5.048209726840504e+17 as 504820972684050400: read integers as floats to compare values
    exported = json.loads(wait_for(lambda: _read(tmp_path / "analyze.json"), what="analyze.json"), parse_int=float)
    browser.find_element("id", "export-csv").click()
    csv_text = wait_for(lambda: _read(tmp_path / "analyze.csv"), what="analyze.csv")
    browser.find_element("id", "export-yaml").click()
    yaml_text = wait_for(lambda: _read(tmp_path / "run.yaml"), what="run.yaml")
    shoot("05-calculator-exported")
    assert exported["step_time_s"] == step
    assert csv_text.splitlines()[1] == f"step,step_time_s,{step!r},s"
    assert len([line for line in csv_text.splitlines() if line.startswith(("tp,", "pp,", "dp,"))]) > 0
    result = runner.invoke(__import__("distcalc.cli", fromlist=["app"]).app,
                           ["analyze", "--config", str(tmp_path / "run.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    rerun = json.loads(result.stdout)
    assert rerun.pop("settings")["seq_len"]["origin"] == "run file"  # the CLI's record of where values came from
    assert rerun == exported, yaml_text


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() and path.stat().st_size else None


def test_custom_link_and_collective_on_a_group_equal_the_cli(server, browser, shoot):
    reload(browser, server + "/?tp=4")  # dp = 4: two ranks per node on two nodes, a two-tier group
    set_field(browser, "intra_bandwidth", "300GB/s")
    set_field(browser, "inter_latency", "10us")
    wait_for(lambda: "intra_bandwidth=300GB" in browser.current_url and settled(browser), what="custom links")
    request = {**PAGE_DEFAULTS, "tp": 4, "intra_bandwidth": "300GB/s", "inter_latency": "10us"}
    wait_for(lambda: float(browser.find_element("id", "m-step").get_attribute("data-value"))
             == cli("analyze", request)[1]["step_time_s"], what="step time with custom links")
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "f-collective")).select_by_visible_text("reduce-scatter")
    group = browser.find_element("id", "f-collective-group")
    Select(group).select_by_value("dp")
    chart = browser.find_element("id", "chart-busbw")
    wait_for(lambda: '"reduce-scatter"' in (chart.get_attribute("data-request") or "")
             and '"hierarchical"' in chart.get_attribute("data-request"), what="dp-group busbw")
    collective_request = json.loads(chart.get_attribute("data-request"))
    code, expected, stderr = cli("collective", collective_request)
    assert code == 0, stderr
    by_algorithm: dict = {}
    for row in expected["results"]:
        by_algorithm.setdefault(row["algorithm"], []).append(row["busbw_bytes_per_s"])
    drawn = {line.get_attribute("data-algorithm"): json.loads(line.get_attribute("data-busbw"))
             for line in chart.find_elements("css selector", "polyline.series")}
    assert drawn == by_algorithm
    # the group is priced with the dp group's η·B as analyze placed it (300 GB/s · η intra, NIC inter)
    groups = cli("analyze", request)[1]["groups"]
    assert collective_request["gpus"] == groups["dp"]["gpus"] == 4
    assert float(collective_request["intra_bandwidth"].removesuffix("GB/s")) * 1e9 == groups["dp"]["bandwidth_bytes_per_s"]
    efficiency = cli("analyze", request)[1]["cluster"]["intra"]["efficiency"]
    assert groups["dp"]["bandwidth_bytes_per_s"] == pytest.approx(300e9 * efficiency, rel=1e-12)  # η on the typed B
    shoot("06-calculator-custom-links-dp-group")
