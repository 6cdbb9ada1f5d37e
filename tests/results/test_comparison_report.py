"""The comparison report across runs (issue 21 item 5): `infersweep compare A B C --html F` writes one
self-contained page with the Pareto of tok/s/GPU against tok/s/user (valid points filled, invalid hollow),
$/Mtok and energy per token where known, the winner at the SLOs from valid points only, and each
candidate's validity. On main there was no such page (`compare` had no --html)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from infersweep.cli import main as cli_main
from infersweep.results.comparison_report import usd_per_mtok
from infersweep.results.table import finish_table

SLO = {"ttft_p50_ms": 2000, "output_throughput_p50_tok_s_per_user": 20}
CTX = {
    "model": "Qwen/Qwen3-0.6B",
    "workload": {"isl": 128, "osl": 64},
    "slo": SLO,
    "source": "measured",
    "gpu_type": "H100",
    "gpu_count": 2,
}
INVALID = "client-bound: AIPerf sent requests 912 ms (p99) after issuing them"


SPREAD = (0.99, 1.0, 1.01)  # three repetitions: a winner is named only from repetitions (issue 43)


def table(recipe: str, points: dict[int, dict], spread=SPREAD) -> pd.DataFrame:
    rows = []
    for (c, p0), (rep, f) in ((pt, rf) for pt in points.items() for rf in enumerate(spread)):
        p = {k: v * f if k in ("gpu", "user") else v for k, v in p0.items()}
        rows.append(
            {
                "run_id": f"wf-{recipe}",
                "recipe": recipe,
                "concurrency": c,
                "repetition": rep,
                "status": "ok",
                "reason": "",
                "error_ratio": 0.0,
                "ttft_p50_ms": 100.0,
                "ttft_avg_ms": 100.0,
                "itl_p50_ms": 5.0,
                "itl_avg_ms": 5.0,
                "request_latency_avg_ms": 900.0,
                "request_latency_p50_ms": 900.0,
                "output_throughput_tok_s": 2 * p["gpu"],
                "request_throughput_req_s": 1.0,
                "output_throughput_tok_s_per_gpu": p["gpu"],
                "output_throughput_avg_tok_s_per_user": p["user"],
                "output_throughput_p50_tok_s_per_user": p["user"],
                "goodput_req_s": 1.0,
                "slo_pass": p.get("slo", True),
                "slo_detail": "meets",
                "valid": p["valid"],
                "validity_reasons": "" if p["valid"] else INVALID,
                **({"energy_j_per_output_token": p["j"]} if "j" in p else {}),
            }
        )
    return finish_table(pd.DataFrame(rows), {"recipe": recipe, "slo": SLO})


def folder(root: Path, name: str, df: pd.DataFrame, **context) -> str:
    f = root / name
    (f / "summary").mkdir(parents=True)
    df.to_parquet(f / "summary" / "results.parquet")
    (f / "summary" / "run.json").write_text(
        json.dumps({"context": {"run_id": f"wf-{name}", "recipe": name, **CTX, **context}})
    )
    return str(f)


# kv's c8 has the most tok/s/GPU of all and "meets" the SLOs in its numbers, but is invalid: never the winner.
RR = table(
    "rr",
    {
        1: {"gpu": 100.0, "user": 90.0, "valid": True, "j": 2.0},
        8: {"gpu": 500.0, "user": 60.0, "valid": True, "j": 0.5},
    },
)
KV = table(
    "kv",
    {
        1: {"gpu": 110.0, "user": 95.0, "valid": True, "j": 1.9},
        8: {"gpu": 900.0, "user": 70.0, "valid": False, "j": 0.3},
    },
)
FP8 = table("fp8", {1: {"gpu": 120.0, "user": 99.0, "valid": True}, 8: {"gpu": 450.0, "user": 65.0, "valid": True}})


@pytest.fixture()
def page(tmp_path, capsys) -> str:
    refs = [folder(tmp_path, "rr", RR), folder(tmp_path, "kv", KV), folder(tmp_path, "fp8", FP8, gpu_type="nothing")]
    out = tmp_path / "report" / "cmp.html"
    assert cli_main(["compare", *refs, "--html", str(out)]) == 0
    assert f"html: {out}" in capsys.readouterr().out
    return out.read_text()


def test_the_page_is_self_contained(page):
    assert not re.search(r"<(img|script|link|iframe)\b", page)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    svg = page[page.index("<svg") : page.index("</svg>") + 6]
    ET.fromstring(svg)  # well-formed inline SVG


def test_valid_points_are_filled_and_invalid_ones_hollow(page):
    svg = page[page.index("<svg") : page.index("</svg>") + 6]
    points = re.findall(r'<circle [^>]*fill="([^"]+)"[^>]*><title>([^<]+)</title>', svg)
    by = {t.split(":")[0]: fill for fill, t in points}
    assert by["kv c8"] == "white" and "INVALID: client-bound" in dict((t.split(":")[0], t) for _, t in points)["kv c8"]
    assert by["rr c8"] != "white" and by["kv c1"] != "white" and by["fp8 c8"] != "white"
    assert len([p for p in points if p[0] != "none"]) == 6  # every measured point of every candidate is drawn
    assert ("none", "winner at the SLOs") in points  # and the winner ringed


def test_the_winner_at_the_slos_is_a_valid_point(page):
    winner = page.split("<h2>Winner at the SLOs</h2>", 1)[1].split("</p>", 1)[0]
    assert "<b>rr</b> at concurrency 8" in winner and "500.0 tok/s/GPU" in winner  # not kv's invalid c8 (900)
    assert "n=3 repetition(s)" in winner and "output_throughput_p50_tok_s_per_user=20, ttft_p50_ms=2000" in winner


def test_cost_and_energy_per_token_where_known_na_where_not(page):
    # H100 at $7/GPU-hour (params/gpus.yaml): 7 / 3600 / 500 tok/s/GPU * 1e6 = $3.89/Mtok
    assert usd_per_mtok(500.0, 7.0) == pytest.approx(3.888, abs=1e-3)
    winner = page.split("<h2>Winner at the SLOs</h2>", 1)[1].split("</p>", 1)[0]
    assert "$3.89/Mtok" in winner and "0.5 J/token" in winner
    fp8 = page.split("<h3>fp8</h3>", 1)[1].split("</table>", 1)[0]
    assert fp8.count("<td>NA</td>") >= 4  # no price for its GPU type, no energy measured


def test_each_candidates_validity_is_shown(page):
    cands = page.split("<h2>Candidates</h2>", 1)[1].split("</table>", 1)[0]
    rows = {re.search(r'<td class="l">([^<]+)</td>', r).group(1): r for r in cands.split("<tr")[2:]}
    assert 'class="win"' in rows["rr"] and "6 of 6" in rows["rr"] and "c8" in rows["rr"]  # repetitions counted
    assert "3 of 6" in rows["kv"] and "(3 invalid)" in rows["kv"] and 'class="win"' not in rows["kv"]
    kv_points = page.split("<h3>kv</h3>", 1)[1].split("</table>", 1)[0]
    assert "NO: client-bound" in kv_points and "NA (invalid)" in kv_points


def test_no_winner_when_no_valid_point_meets_the_slos(tmp_path, capsys):
    bad = table("bad", {4: {"gpu": 900.0, "user": 70.0, "valid": False}})
    refs = [
        folder(tmp_path, "a", bad),
        folder(tmp_path, "b", table("b", {4: {"gpu": 800.0, "user": 5.0, "valid": True, "slo": False}})),
    ]
    out = tmp_path / "c.html"
    assert cli_main(["compare", *refs, "--html", str(out)]) == 0
    assert "<b>none</b>: no candidate has a valid point meeting the SLOs" in out.read_text()


def test_changes_are_marked_both_ways(page):
    changes = page.split("<h2>Changes per concurrency</h2>", 1)[1]
    kv = changes.split("<h3>kv against rr</h3>", 1)[1].split("</table>", 1)[0]
    # tok/s/user is judged (an SLO): kv's c1 +5.6 % beyond noise is kv better, green and starred
    assert re.search(r'<td class="better" title="better; p=[^"]+">\+5\.6% ±[0-9.]+\*</td>', kv)
    fp8 = changes.split("<h3>fp8 against rr</h3>", 1)[1].split("</table>", 1)[0]
    # fp8's c8 has 65 tok/s/user against rr's 60: better; its tok/s/GPU is a description (not judged): plain
    assert 'class="worse"' in fp8 or 'class="better"' in fp8
    assert "[judged]" in changes and "! (red) = rr better" in changes


def test_a_tie_names_no_winner_and_says_what_would_decide(tmp_path, capsys):
    near = {8: {"gpu": 500.0, "user": 60.0, "valid": True}}
    twin = {8: {"gpu": 505.0, "user": 60.0, "valid": True}}
    refs = [
        folder(tmp_path, "a", table("a", near, (0.95, 1.0, 1.05))),
        folder(tmp_path, "b", table("b", twin, (0.95, 1.0, 1.05))),
    ]
    out = tmp_path / "c.html"
    assert cli_main(["compare", *refs, "--html", str(out)]) == 0
    winner = out.read_text().split("<h2>Winner at the SLOs</h2>", 1)[1].split("</p>", 1)[0]
    assert "<b>none told apart</b>" in winner and "b or a: not told apart at n = 3" in winner


def test_simulated_runs_are_not_priced_at_a_gpus_list_price(tmp_path, capsys):
    """Issue 38 item 2: the page priced mocker runs in $/Mtok at the H100 list price."""
    sim = {"source": "simulated (built-in timing)"}
    refs = [folder(tmp_path, "rr", RR.assign(**sim), **sim), folder(tmp_path, "fp8", FP8.assign(**sim), **sim)]
    out = tmp_path / "cmp.html"
    assert cli_main(["compare", *refs, "--html", str(out), "--mix-sources"]) == 0
    page = out.read_text()
    assert not re.search(r"\$\d[\d.]*/Mtok", page)  # no cost anywhere: the winner line and the tables say NA
    assert "no price for simulated runs: fp8, rr" in page and "H100: $" not in page
    assert "Simulated run" in page


def test_two_long_recipe_names_stay_two_legend_entries(tmp_path):
    """Issue 38 item 15: the legend cut both names at 26 characters into the same string."""
    from infersweep.results.comparison_report import legend_labels

    a, b = "lightning-trtllm-agg-b200-bf16", "lightning-trtllm-agg-b200-mtp-bf16"
    short = legend_labels([a, b, "rr"])
    assert short[a] != short[b] and all(len(v) <= 26 for v in short.values()) and short["rr"] == "rr"
    assert short[a].endswith("b200-bf16") and short[b].endswith("mtp-bf16")
    refs = [folder(tmp_path, a, RR), folder(tmp_path, b, FP8)]
    out = tmp_path / "cmp.html"
    assert cli_main(["compare", *refs, "--html", str(out)]) == 0
    page = out.read_text()
    assert f">{short[a]}<title>{a}</title>" in page and f">{short[b]}<title>{b}</title>" in page
