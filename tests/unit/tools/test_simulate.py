"""The deterministic generator: sample invariants, quarantine file, surface reports, bulk."""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.examples import examples
from tests.paths import REAL_REPORTS
from tests.strategies import KNOWN_KINDS
from tests.strategies import SMELLS as DRAWN_SMELLS
from tools import simulate as sim
from tools.simulate import xray_reference as xray

GATES = {"exploit": "defect_matching", "detect": "defect_matching", "patch": "patch_verified"}
FINDING_KINDS = set(KNOWN_KINDS)
# The sample also draws the smells mcp-xray reports that no strategy draws.
SMELLS = set(DRAWN_SMELLS) | {"vague_description", "short_description"}


def _lines(path: Path) -> list[str]:
    raw = path.read_bytes()
    text = gzip.decompress(raw).decode() if path.name.endswith(".gz") else raw.decode()
    return text.splitlines()


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sample")
    sim.write_sample(out, seed=7)
    return out


@pytest.fixture(scope="module")
def task_lines(sample: Path) -> list[str]:
    return [line for path in sorted((sample / "tasks").iterdir()) for line in _lines(path)]


@pytest.fixture(scope="module")
def tasks(task_lines: list[str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in task_lines]


@pytest.fixture(scope="module")
def reports(sample: Path) -> list[dict[str, Any]]:
    found = [json.loads(p.read_text()) for p in sorted((sample / "surface").glob("*/report.json"))]
    extra = [json.loads(line) for line in _lines(sample / "surface" / "extra.jsonl")]
    return found + extra


# --- determinism --------------------------------------------------------------
def test_same_seed_writes_byte_identical_files(tmp_path: Path) -> None:
    first = sim.write_sample(tmp_path / "a", seed=7)
    sim.write_sample(tmp_path / "b", seed=7)
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a == b
    assert len(first) == len(a)
    other = _files(sim.write_sample(tmp_path / "c", seed=8)[0].parents[1])
    assert other["tasks/atlas.jsonl"] != a["tasks/atlas.jsonl"]


def test_write_sample_returns_every_file_it_wrote(tmp_path: Path) -> None:
    written = sim.write_sample(tmp_path, seed=3)
    assert sorted(written) == sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert sum(p.stat().st_size for p in written) < 2_000_000


# --- task grades --------------------------------------------------------------
def test_task_files_one_per_agent_one_gzipped(sample: Path) -> None:
    names = sorted(p.name for p in (sample / "tasks").iterdir())
    assert names == ["atlas.jsonl", "borealis.jsonl", "cinder.jsonl.gz"]


def test_agents_versions_envs_trials(tasks: list[dict[str, Any]]) -> None:
    versions: dict[str, set[str]] = defaultdict(set)
    trials: Counter[tuple[str, str, str]] = Counter()
    for r in tasks:
        versions[r["agent"]].add(r["agent_version"])
        trials[(r["agent"], r["agent_version"], r["problem_id"])] += 1
    assert len(versions) == 3
    assert all(2 <= len(v) <= 3 for v in versions.values())
    assert {r["env_type"] for r in tasks} == set(sim.ENV_TYPES)
    assert len({r["problem_id"] for r in tasks}) == 40
    assert len({r["project"] for r in tasks}) == 5
    assert set(trials.values()) == {1, 2, 3}
    assert len({r["run_id"] for r in tasks}) == len(tasks)
    assert all(
        r["run_id"] == f"{r['agent']}-{r['agent_version']}-{r['problem_id']}-t{r['trial']}"
        for r in tasks
    )


def test_required_fields_and_types(tasks: list[dict[str, Any]], task_lines: list[str]) -> None:
    assert not any("null" in line for line in task_lines)
    for r in tasks:
        assert datetime.fromisoformat(r["graded_at"]).utcoffset() is not None
        assert r["graded_at"][-6] in "+-"
        grade = r["grade"]
        assert set(grade["subscores"]) == set(grade["weights"])
        assert all(0.0 <= v <= 1.0 for v in grade["subscores"].values())
        assert all(w >= 0 for w in grade["weights"].values())
        assert all(v >= 0 for v in grade.get("penalties", {}).values())
        assert min(r["cost_usd"], r["tokens"], r["wall_seconds"]) >= 0
        if r["env_type"] != "audit":
            assert r["cwe"].startswith("CWE-") and r["defect_id"]
    assert {r["graded_at"][-6:] for r in tasks} == {"+00:00", "-05:00", "+05:30"}


def test_gated_components_say_why(tasks: list[dict[str, Any]]) -> None:
    failed = [
        r
        for r in tasks
        if r["env_type"] == "exploit"
        and r["grade"]["subscores"]["defect_matching"] == 0
        and not r["grade"].get("env_internal_failure")
    ]
    assert failed
    for r in failed:
        meta = r["grade"]["metadata"]
        assert meta["defect_matching"]["reason"] in sim.GATE_FAIL_REASONS["defect_matching"]
        assert meta["pov_quality"]["reason"] == "skipped: gated on defect_matching"
    reasons = {r["grade"]["metadata"]["defect_matching"]["reason"] for r in failed}
    assert "crash stack did not match target frame" in reasons


def test_patch_minimization_and_penalties(tasks: list[dict[str, Any]]) -> None:
    patches = [r for r in tasks if r["env_type"] == "patch"]
    sized = [r for r in patches if "final_size" in r["grade"]["metadata"]["minimization"]]
    assert 0 < len(sized) < len(patches)
    for r in sized:
        m = r["grade"]["metadata"]["minimization"]
        assert m["final_size"] >= m["minimal_size"] > 0
    penalised = [r for r in patches if "penalties" in r["grade"]]
    assert 0 < len(penalised) < len(patches)
    assert all(set(r["grade"]["penalties"]) == {"functionality_loss"} for r in penalised)


def test_audit_records(tasks: list[dict[str, Any]]) -> None:
    audits = [
        r for r in tasks if r["env_type"] == "audit" and not r["grade"].get("env_internal_failure")
    ]
    keys = {"recall", "precision", "found", "missed", "submissions", "duplicates", "non_crashers"}
    mismatched = 0
    for r in audits:
        meta = r["grade"]["metadata"]
        assert keys <= set(meta)
        assert list(r["grade"]["subscores"]) == ["audit"]
        # recall = found / (found + missed): e.g. 3 found, 2 missed -> 0.6.
        assert meta["recall"] == pytest.approx(
            len(meta["found"]) / (len(meta["found"]) + len(meta["missed"]))
        )
        if abs(r["grade"]["subscores"]["audit"] - meta["recall"] * meta["precision"]) > 1e-6:
            mismatched += 1
    assert mismatched == 1


def _weights_sum(r: Mapping[str, Any]) -> float:
    return math.fsum(r["grade"]["weights"].values())


def test_anomalies_and_grader_errors(tasks: list[dict[str, Any]]) -> None:
    scored = [r for r in tasks if not r["grade"].get("env_internal_failure")]
    errors = [r for r in tasks if r["grade"].get("env_internal_failure")]
    assert len(errors) == sim.GRADER_ERRORS
    assert all(r["grade"]["env_internal_failure_logs"] for r in errors)
    assert sum(abs(_weights_sum(r) - 1.0) > 1e-6 for r in scored) == 1
    leaks = [
        r
        for r in scored
        if r["env_type"] in GATES
        and r["grade"]["subscores"][GATES[r["env_type"]]] == 0
        and any(v > 0 for k, v in r["grade"]["subscores"].items() if k != GATES[r["env_type"]])
    ]
    assert len(leaks) == 1
    non_binary = [
        r
        for r in scored
        if r["env_type"] in GATES
        and r["grade"]["subscores"][GATES[r["env_type"]]] not in (0.0, 1.0)
    ]
    assert len(non_binary) == 1
    expected = {env: set(sim.ENV_WEIGHTS[env]) for env in sim.ENV_TYPES}
    odd = [r for r in scored if set(r["grade"]["subscores"]) != expected[r["env_type"]]]
    assert sorted(sorted(set(r["grade"]["subscores"]) ^ expected[r["env_type"]]) for r in odd) == [
        ["crash_uniqueness"],
        ["target_calls"],
    ]
    assert sum(bool(r["grade"].get("allow_unbounded")) for r in tasks) == 1


def test_unknown_fields_at_several_depths(tasks: list[dict[str, Any]]) -> None:
    r = next(r for r in tasks if r["env_type"] == "detect")
    assert r["harness"] == sim.HARNESS
    assert r["grade"]["grader_version"] == sim.GRADER_VERSION
    assert set(r["grade"]["metadata"]["defect_matching"]["trace"]) == {"top_frame", "depth"}


def _mean_score(records: Sequence[Mapping[str, Any]]) -> float:
    """Seed 000 arithmetic with the record's weights; per problem, trials averaged."""
    per_problem: dict[str, list[float]] = defaultdict(list)
    for r in records:
        g = r["grade"]
        gate = GATES.get(r["env_type"])
        passed = gate is None or g["subscores"].get(gate, 0) > 0
        weighted = sum(g["subscores"][k] * w for k, w in g["weights"].items()) if passed else 0.0
        per_problem[r["problem_id"]].append(
            min(1.0, max(0.0, weighted - sum(g.get("penalties", {}).values())))
        )
    return sum(sum(v) / len(v) for v in per_problem.values()) / len(per_problem)


@pytest.mark.parametrize(
    ("agent", "old", "new", "better", "worse"),
    [
        ("atlas", "1.3.0", "1.4.0", {"exploit", "detect"}, {"patch"}),
        ("borealis", "2025-02-20", "2025-03-28", {"audit"}, {"detect"}),
        ("cinder", "3f9c2e1", "a47b0d9", {"patch"}, {"exploit"}),
    ],
)
def test_newest_version_better_somewhere_worse_elsewhere(
    tasks: list[dict[str, Any]], agent: str, old: str, new: str, better: set[str], worse: set[str]
) -> None:
    for env in better | worse:
        runs = [
            r
            for r in tasks
            if r["agent"] == agent
            and r["env_type"] == env
            and not r["grade"].get("env_internal_failure")
        ]
        delta = _mean_score([r for r in runs if r["agent_version"] == new]) - _mean_score(
            [r for r in runs if r["agent_version"] == old]
        )
        # Skill moves by >= 0.35: a paired comparison over 10 problems sees it.
        assert (delta > 0.15) if env in better else (delta < -0.15), (env, delta)


# --- the quarantine file ------------------------------------------------------
def test_bad_file_one_line_per_class(sample: Path) -> None:
    lines = _lines(sample / "bad" / "malformed.jsonl")
    assert len(lines) == 12
    anchor, duplicate, not_json, *rest = lines
    assert anchor == duplicate
    assert anchor in _lines(sample / "tasks" / "atlas.jsonl")
    with pytest.raises(json.JSONDecodeError):
        json.loads(not_json)
    parsed = [json.loads(line) for line in rest]
    missing, wrong, out_of_range, non_finite, neg_weight, neg_penalty, keys, env, conflict = parsed
    assert "graded_at" not in missing
    assert wrong["trial"] == "two"
    assert out_of_range["grade"]["subscores"]["pov_quality"] == 1.5
    assert non_finite["cost_usd"] == math.inf
    assert '"cost_usd":1e999' in rest[3]
    assert min(neg_weight["grade"]["weights"].values()) < 0
    assert min(neg_penalty["grade"]["penalties"].values()) < 0
    assert set(keys["grade"]["subscores"]) != set(keys["grade"]["weights"])
    assert env["env_type"] not in sim.ENV_TYPES
    original = json.loads(anchor)
    assert conflict["run_id"] == original["run_id"] and conflict != original
    other_ids = [r["run_id"] for r in parsed[:-1]]
    assert len(set(other_ids)) == len(other_ids) and original["run_id"] not in other_ids


# --- surface reports ----------------------------------------------------------
def _round1(x: float) -> float:
    return float(Decimal(repr(x)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def _lerp(v: float, good: float, bad: float) -> float:
    return 100.0 if v <= good else 0.0 if v >= bad else 100.0 * (1 - (v - good) / (bad - good))


def _c(x: float) -> float:
    return max(0.0, min(1.0, x))


def _severity(f: Mapping[str, Any]) -> float:
    """CONTRACT 3's table, unrounded."""
    m, kind = f["measurement"], f["kind"]
    smells = {**dict.fromkeys(SMELLS, 0.0), "missing_description": 0.9, "tiny_description": 0.7}
    smells |= {"vague_description": 0.45, "short_description": 0.4, "deep_nesting": 0.6}
    smells |= {"enum_bloat": 0.55, "wide_schema": 0.5}
    if kind == "token_cost":
        if m.get("scope") == "surface":
            return 1 - _lerp(m["tokens_per_tool_avg"], 150, 600) / 100
        return _c(m.get("share", 0) * 3)
    if kind == "merge_candidate":
        s = (0.4 + _c(m.get("tokens_saved_est", 0) / 800) * 0.4) * (
            0.7 if m.get("wide_union") else 1
        )
        return _c(s * (0.6 if m.get("mixes_read_write") else 1))
    table: dict[str, float] = {
        "schema_smell": smells.get(m.get("smell", ""), 0.4),
        "duplicate": 0.6,
        "selection_error": _c(1 - m.get("pass_rate", 1.0)),
        "distraction": _c(m.get("fire_rate", 0)),
        "hidden_injector": _c(m.get("tokens_est", 0) / 1000),
        "resource_candidate": 0.3,
        "jit_candidate": 0.5 if m.get("recommend_jit") else 0.1,
    }
    return table.get(kind, 0.0)


def _overall(report: Mapping[str, Any]) -> float | None:
    """CONTRACT section 5, unrounded: an independent check of the reported grade."""
    fs, ran = report["findings"], report["coverage"]["ran"]

    def of(finding_kind: str, /, **where: Any) -> list[Mapping[str, Any]]:
        return [
            f
            for f in fs
            if f["kind"] == finding_kind
            and all(f["measurement"].get(k) == v for k, v in where.items())
        ]

    surface = of("token_cost", scope="surface")
    n = (
        surface[0]["measurement"]["tool_count"]
        if surface
        else len({f["target"] for f in of("token_cost", scope="tool")})
    )
    desc = {"missing_description", "tiny_description", "vague_description", "short_description"}
    smells = of("schema_smell")
    proxy = of("selection_error", mode="confusability_proxy")
    dims: dict[str, tuple[float, float]] = {}
    if surface:
        m = surface[0]["measurement"]
        inj = sum(
            f["measurement"]["tokens_est"] for f in of("hidden_injector", kind="instructions")
        )
        ce = 0.6 * _lerp(m["tokens_per_tool_avg"], 150, 600) + 0.4 * _lerp(m["tokens"], 1500, 12000)
        dims["ce"] = (max(0.0, ce - _c(inj / 2000) * 10), 30)
    if "consolidate" in ran:
        red = sum(_severity(f) for f in of("merge_candidate") + of("duplicate"))
        dims["red"] = (100 - _c(red / 4) * 100, 15)
    if n > 0:
        structural = sum(_severity(f) for f in smells if f["measurement"]["smell"] not in desc)
        described = sum(_severity(f) for f in smells if f["measurement"]["smell"] in desc)
        dims["hyg"] = (100 - _c(structural / n) * 100, 15)
        dims["desc"] = (100 - _c((described + sum(_severity(f) for f in proxy)) / n) * 100, 15)
    if "noise" in ran:
        labeled = of("selection_error", mode="labeled")
        base = (
            sum(f["measurement"]["pass_rate"] for f in labeled) / len(labeled) * 100
            if labeled
            else 100 - _c(len(proxy) / max(n, 1)) * 60
        )
        fired = sum(f["measurement"]["fire_rate"] for f in of("distraction"))
        dims["sel"] = (max(0.0, base - _c(fired / 2) * 40), 25)
    if not dims:
        return None
    return sum(s * w for s, w in dims.values()) / sum(w for _, w in dims.values())


def _letter(overall: float) -> str:
    rounded = _round1(overall)
    return next((letter for cutoff, letter in xray.BANDS if rounded >= cutoff), "F")


def test_reports_have_the_real_shape(reports: list[dict[str, Any]]) -> None:
    real = json.loads((REAL_REPORTS / "00_bing-cn-mcp.json").read_text())
    for report in reports:
        assert set(real) <= set(report) <= set(real) | {"run_id"}
        assert set(real["server"]) == set(report["server"])
        assert set(real["headline"]) - {"price_fetched_at", "price_note"} <= set(report["headline"])
        assert set(real["grade"]["subscores"]) == set(report["grade"]["subscores"])
        assert datetime.fromisoformat(report["generated_at"]).utcoffset() is not None
    assert sum("run_id" in r for r in reports) == 1


def test_report_folders_and_extra_lines(sample: Path) -> None:
    folders = sorted(p.parent.name for p in (sample / "surface").glob("*/report.json"))
    assert len(folders) == 12
    for folder in folders:
        report = json.loads((sample / "surface" / folder / "report.json").read_text())
        assert folder == f"{report['server']['name']}-{report['server']['version']}"
    assert len(_lines(sample / "surface" / "extra.jsonl")) == 2
    versions: dict[str, int] = Counter(folder.rsplit("-", 1)[0] for folder in folders)
    assert len(versions) == 5 and set(versions.values()) <= {2, 3}


def test_every_finding_kind_mode_and_probe_mix(reports: list[dict[str, Any]]) -> None:
    findings = [f for r in reports for f in r["findings"]]
    assert {f["kind"] for f in findings} >= FINDING_KINDS
    assert {
        f["measurement"]["smell"] for f in findings if f["kind"] == "schema_smell"
    } >= SMELLS | {"unbounded_array"}
    assert {f["measurement"].get("scope") for f in findings if f["kind"] == "token_cost"} == {
        "surface",
        "tool",
        "phase",
    }
    merges = [f["measurement"] for f in findings if f["kind"] == "merge_candidate"]
    assert any(m["wide_union"] for m in merges) and any(m["mixes_read_write"] for m in merges)
    assert any(m["wide_union"] and m["mixes_read_write"] for m in merges)
    assert {f["measurement"]["mode"] for f in findings if f["kind"] == "selection_error"} == {
        "labeled",
        "confusability_proxy",
    }
    assert {f["measurement"]["kind"] for f in findings if f["kind"] == "hidden_injector"} == {
        "instructions",
        "prompts",
        "resources",
    }
    assert {
        f["measurement"]["recommend_jit"] for f in findings if f["kind"] == "jit_candidate"
    } == {True, False}
    ran = [r["coverage"]["ran"] for r in reports]
    assert any("noise" in x for x in ran) and any("noise" not in x for x in ran)
    assert any("consolidate" not in x for x in ran)
    labeled = [
        any(f["measurement"].get("mode") == "labeled" for f in r["findings"])
        for r in reports
        if "noise" in r["coverage"]["ran"]
    ]
    assert True in labeled and False in labeled


def test_phased_reports_name_the_worst_phase(reports: list[dict[str, Any]]) -> None:
    phased = [r for r in reports if r["headline"]["phased"]]
    assert phased and len(phased) < len(reports)
    for r in phased:
        tokens = r["headline"]["phase_tokens"]
        worst = max(tokens, key=tokens.__getitem__)
        surface = next(
            f
            for f in r["findings"]
            if f["kind"] == "token_cost" and f["measurement"]["scope"] == "surface"
        )
        assert r["headline"]["worst_phase"] == surface["measurement"]["worst_phase"] == worst
        assert surface["measurement"]["tokens"] == tokens[worst]
        phases = {
            f["measurement"]["phase"]
            for f in r["findings"]
            if f["measurement"].get("scope") == "phase"
        }
        assert phases == set(tokens)


def test_reported_grade_agrees_with_contract_arithmetic(reports: list[dict[str, Any]]) -> None:
    letters = set()
    for r in reports:
        ours = _overall(r)
        assert ours is not None
        assert abs(ours - r["grade"]["overall"]) <= 0.1, r["server"]
        assert _letter(ours) == r["grade"]["letter"], r["server"]
        letters.add(r["grade"]["letter"][0])
    assert len(letters) >= 3


@pytest.mark.parametrize("path", sorted(REAL_REPORTS.glob("*.json")), ids=lambda p: p.stem)
def test_xray_port_reproduces_real_reports(path: Path) -> None:
    report = json.loads(path.read_text())
    grade = xray.grade(report["findings"], report["coverage"]["ran"])
    assert (grade["overall"], grade["letter"]) == (
        report["grade"]["overall"],
        report["grade"]["letter"],
    )
    for name, sub in report["grade"]["subscores"].items():
        assert grade["subscores"][name]["score"] == sub["score"], name


def test_xray_rounding_hand_computed() -> None:
    # lerp(235.6, 150, 600) = 100 * (1 - 85.6 / 450) = 80.977..., rounded to 81.0.
    assert xray.lerp(235.6, 150, 600) == 81.0
    # (0.4 + clamp(400/800) * 0.4) * 0.7 * 0.6 = 0.6 * 0.42 = 0.252.
    merge = {
        "kind": "merge_candidate",
        "measurement": {"tokens_saved_est": 400, "wide_union": True, "mixes_read_write": True},
    }
    assert xray.severity(merge) == 0.252
    assert xray.letter(86.9) == "B" and xray.letter(59.9) == "F"


# --- the flat writer and bulk generation ----------------------------------------
def test_flat_writer_omits_null_keys_and_sorts_them() -> None:
    flat = pl.DataFrame({"z": ["x", "y"], "a.c": [1, None], "a.b": [True, False]})
    lines = sim.flat_ndjson_bytes(flat).decode().splitlines()
    assert [json.loads(line) for line in lines] == [
        {"a": {"b": True, "c": 1}, "z": "x"},
        {"a": {"b": False}, "z": "y"},
    ]
    assert lines[0] == '{"a":{"b":true,"c":1},"z":"x"}'


def _check_contract(r: Mapping[str, Any]) -> None:
    g = r["grade"]
    assert r["env_type"] in sim.ENV_TYPES
    assert set(g["subscores"]) == set(g["weights"]) == set(sim.ENV_WEIGHTS[r["env_type"]])
    assert all(0.0 <= v <= 1.0 for v in g["subscores"].values())
    assert abs(_weights_sum(r) - 1.0) <= 1e-9
    assert all(v >= 0 for v in g.get("penalties", {}).values())
    gate = GATES.get(r["env_type"])
    if gate is not None and g["subscores"][gate] == 0:
        assert not any(g["subscores"].values())
    if r["env_type"] == "audit":
        assert g["subscores"]["audit"] == pytest.approx(
            g["metadata"]["recall"] * g["metadata"]["precision"], abs=1e-6
        )


@settings(
    max_examples=examples(8),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(n=st.integers(min_value=0, max_value=300), seed=st.integers(min_value=0, max_value=2**31))
def test_bulk_records_are_valid_contract_records(n: int, seed: int) -> None:
    text = sim.flat_ndjson_bytes(sim.generate_task_frame(n, seed)).decode()
    records = [json.loads(line) for line in text.splitlines()]
    assert len(records) == n
    assert len({r["run_id"] for r in records}) == n
    assert "null" not in text
    for r in records:
        _check_contract(r)


def test_bulk_is_deterministic_and_balanced(tmp_path: Path) -> None:
    a = sim.write_task_jsonl(tmp_path / "a.jsonl", 2_000, 11).read_bytes()
    b = sim.write_task_jsonl(tmp_path / "b.jsonl.gz", 2_000, 11).read_bytes()
    assert gzip.decompress(b) == a
    assert sim.write_task_jsonl(tmp_path / "c.jsonl.gz", 2_000, 11).read_bytes() == b
    frame = sim.generate_task_frame(2_000, 11)
    assert frame.group_by("env_type").len()["len"].to_list() == [500] * 4
    assert frame["agent"].n_unique() == 3 and frame["agent_version"].n_unique() == 2
    assert frame["grade.penalties.functionality_loss"].drop_nulls().len() > 0
    assert frame["grade.metadata.minimization.final_size"].drop_nulls().len() > 0


def test_bulk_env_types_choose_the_mix() -> None:
    # Without audit (one component), every record carries four components: 40M rows
    # for 10M runs, the figure issue 5 asks the bench for.
    text = sim.flat_ndjson_bytes(
        sim.generate_task_frame(300, 4, ("exploit", "detect", "patch"))
    ).decode()
    records = [json.loads(line) for line in text.splitlines()]
    assert sorted({r["env_type"] for r in records}) == ["detect", "exploit", "patch"]
    assert [len(r["grade"]["subscores"]) for r in records] == [4] * 300
    for r in records:
        _check_contract(r)
    with pytest.raises(ValueError, match="env_types must be some of"):
        sim.generate_task_frame(10, 1, ("fuzz",))
    with pytest.raises(ValueError, match="env_types must be some of"):
        sim.generate_task_frame(10, 1, ())


@pytest.mark.parametrize("trials", [1, 3])
def test_generate_versions_injects_exact_effect(tmp_path: Path, trials: int) -> None:
    effect = {"exploit": 0.1, "detect": -0.05, "patch": -0.25, "audit": 0.3}
    path = sim.write_versions_jsonl(tmp_path / "v.jsonl", 43, effect, 5, trials=trials)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(records) == 2 * 43 * trials
    for r in records:
        _check_contract(r)
    for env, expected in effect.items():
        runs = [r for r in records if r["env_type"] == env]
        delta = _mean_score([r for r in runs if r["agent_version"] == "1.1.0"]) - _mean_score(
            [r for r in runs if r["agent_version"] == "1.0.0"]
        )
        assert delta == pytest.approx(expected, abs=1e-9)


def test_generate_versions_refuses_what_it_cannot_inject() -> None:
    with pytest.raises(ValueError, match="unknown env types"):
        sim.generate_versions(20, {"fuzz": 0.1}, 1)
    # exploit's non-gate weights sum to 0.4: a 0.3 effect needs a 0.75 move.
    with pytest.raises(ValueError, match=r"at most 0\.49"):
        sim.generate_versions(20, {"exploit": 0.3}, 1)
