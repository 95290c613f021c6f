"""Inspect AI eval logs as task grades (issue 17), on genuine logs inspect-ai writes here.

A tiny task whose solver calls no model and whose scorer returns a dict of components
runs offline under ``mockllm/model``: two tasks (exploit, patch), two epochs, two agent
versions named in eval metadata, one sample that errors. The landed runs are checked
against Inspect's own ``samples_df`` and against scores computed here from the
CONTRACT's default weights.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import pytest

from pipeline.rubric import RubricError, parse_rubric
from pipeline.sources.blocks import STILL_RUNNING, UNREADABLE_LOG
from pipeline.sources.inspect import members, table
from pipeline.sources.inspect.columns import InspectMapping, parse_mapping
from pipeline.sources.inspect.extract import (
    ScoreParts,
    components,
    equal_weights,
    grade_metadata,
    is_inspect_log,
    run_id,
    to_subscore,
    usage_totals,
)
from tests.clirunner import pipeline, summary_counts
from tests.paths import REAL_REPORTS

AGENT = "secbot"
VERSIONS = {"1.0": 0, "2.0": 1}  # agent_version -> the task's `strength` argument
EPOCHS = 2
PROBLEMS = 3  # per task, besides the sample that errors

TASKS = textwrap.dedent(
    """
    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import solver


    @solver
    def no_model():
        async def solve(state, generate):
            if state.sample_id == "ex-boom":
                raise RuntimeError("sandbox went away")
            return state
        return solve


    def parts(index, epoch, strength, names):
        gate = 1.0 if (index + epoch + strength) % 3 else 0.0
        rest = [((index * 7 + epoch * 3 + strength * (k + 2)) % 11) / 10 for k in range(3)]
        return dict(zip(names, [gate, *rest]))


    @scorer(metrics={"*": [mean()]})
    def components(names):
        async def score(state, target):
            index = int(str(state.sample_id).split("-")[1])
            strength = state.metadata["strength"]
            value = parts(index, state.epoch, strength, names)
            return Score(
                value=value,
                explanation=f"{names[0]} {'met' if value[names[0]] else 'missed'}",
                metadata={names[0]: {"reason": "no crash" if not value[names[0]] else "ok"}},
            )
        return score


    def samples(prefix, env_type, strength, boom=False):
        ids = [f"{prefix}-{i}" for i in range(PROBLEMS)] + ([f"{prefix}-boom"] if boom else [])
        return [
            Sample(id=i, input="go", target="-", metadata={"env_type": env_type,
                   "cwe": "CWE-787", "strength": strength})
            for i in ids
        ]


    EXPLOIT = ["defect_matching", "pov_quality", "summary_quality", "target_calls"]
    PATCH = ["patch_verified", "number_of_attempts", "size_of_patch", "minimization"]


    @task
    def exploit_t(strength: int = 0):
        return Task(dataset=samples("ex", "exploit", strength, boom=True),
                    solver=no_model(), scorer=components(EXPLOIT))


    @task
    def patch_t(strength: int = 0):
        return Task(dataset=samples("pa", "patch", strength),
                    solver=no_model(), scorer=components(PATCH))
    """
).replace("PROBLEMS", str(PROBLEMS))

# CONTRACT 6's default weights, written out here: the independent scorer.
DEFAULT_WEIGHTS = {
    "exploit": {
        "defect_matching": 0.6,
        "pov_quality": 0.2,
        "summary_quality": 0.1,
        "target_calls": 0.1,
    },
    "patch": {
        "patch_verified": 0.25,
        "number_of_attempts": 0.25,
        "size_of_patch": 0.25,
        "minimization": 0.25,
    },
}
GATES = {"exploit": "defect_matching", "patch": "patch_verified"}


def expected_score(env_type: str, parts: dict[str, float]) -> float:
    """CONTRACT 4 by hand: a failed gate zeroes the rest; weighted sum, clamped."""
    if parts[GATES[env_type]] <= 0:
        return 0.0
    total = sum(DEFAULT_WEIGHTS[env_type][name] * value for name, value in parts.items())
    return min(1.0, max(0.0, total))


def _write_logs(folder: Path) -> list[Path]:
    import inspect_ai

    (folder / "evals").mkdir()
    task_file = folder / "evals" / "tasks.py"
    task_file.write_text(TASKS)
    logs = folder / "logs"
    for version, strength in VERSIONS.items():
        done = inspect_ai.eval(
            [f"{task_file}@exploit_t", f"{task_file}@patch_t"],
            task_args={"strength": strength},
            model="mockllm/model",
            log_dir=str(logs),
            epochs=EPOCHS,
            metadata={"agent": AGENT, "agent_version": version},
            fail_on_error=False,
            display="none",
        )
        assert all(log.status == "success" for log in done)
    return sorted(logs.glob("*.eval"))


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    pytest.importorskip("inspect_ai")
    return _write_logs(tmp_path_factory.mktemp("inspect"))


@pytest.fixture(scope="module")
def lake(logs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    lake = tmp_path_factory.mktemp("lake") / "lake"
    done = pipeline("run", logs[0].parent, "--lake", lake)
    assert done.returncode == 0, done.stderr + done.stdout
    return lake


def _rows(lake: Path, sql: str) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def _inspect_samples(logs: list[Path]) -> Any:
    from inspect_ai.analysis import samples_df

    return samples_df([str(p) for p in logs], quiet=True)


def _errored(frame: Any) -> Any:
    """samples_df's error column: text when the sample errored, empty or null otherwise."""
    return frame["error"].fillna("").astype(str).str.len() > 0


@pytest.mark.slow
def test_one_task_run_per_sample_and_epoch_as_inspect_counts_them(
    logs: list[Path], lake: Path
) -> None:
    frame = _inspect_samples(logs)
    samples_per_version = (PROBLEMS + 1 + PROBLEMS) * EPOCHS
    assert len(logs) == 2 * len(VERSIONS)
    assert len(frame) == samples_per_version * len(VERSIONS)
    runs = _rows(lake, "select status, count(*) from task_runs group by all order by 1")
    errored = int(_errored(frame).sum())
    assert errored == len(VERSIONS) * EPOCHS  # ex-boom, each version and epoch
    assert dict(runs) == {"scored": len(frame) - errored, "grader_error": errored}
    keys = _rows(
        lake,
        "select r.problem_id, r.trial, m.value from task_runs r join run_metadata m "
        "using (run_id) where m.key = 'inspect.eval_id'",
    )
    ours = {(p, t, json.loads(e)) for p, t, e in keys}
    theirs = set(zip(frame["id"], frame["epoch"], frame["eval_id"], strict=True))
    assert ours == theirs


@pytest.mark.slow
def test_subscores_equal_inspects_own_and_scores_equal_an_independent_scorer(
    logs: list[Path], lake: Path
) -> None:
    frame = _inspect_samples(logs)
    scored = frame[~_errored(frame)]
    theirs = {
        (sample_id, epoch, eval_id): json.loads(value)
        for sample_id, epoch, eval_id, value in zip(
            scored["id"],
            scored["epoch"],
            scored["eval_id"],
            scored["score_components"],
            strict=True,
        )
    }
    rows = _rows(
        lake,
        "select r.problem_id, r.trial, json_extract_string(r.record, '$.grade.metadata"
        ".inspect.eval_id'), r.env_type, r.score, list(c.component order by c.component), "
        "list(c.stored_subscore order by c.component) from task_runs r join task_components c "
        "using (run_id) where r.status = 'scored' group by all",
    )
    assert len(rows) == len(theirs)
    for problem, trial, eval_id, env_type, score, names, values in rows:
        parts = theirs[(problem, trial, eval_id)]
        assert dict(zip(names, values, strict=True)) == parts
        assert score == pytest.approx(expected_score(env_type, parts), abs=1e-12)


@pytest.mark.slow
def test_provenance_is_kept_on_each_run(logs: list[Path], lake: Path) -> None:
    keys = {
        key
        for (key,) in _rows(
            lake, "select distinct key from run_metadata where key like 'inspect.%'"
        )
    }
    assert {
        "inspect.eval_id",
        "inspect.task",
        "inspect.task_version",
        "inspect.sample_uuid",
        "inspect.model",
    } <= keys
    sources = {s for (s,) in _rows(lake, "select distinct source from task_runs")}
    assert sources == {str(p.resolve()) for p in logs}
    errors = _rows(
        lake, "select problem_id, failure_logs from task_runs where status = 'grader_error'"
    )
    assert {p for p, _ in errors} == {"ex-boom"}
    assert all("sandbox went away" in logs_[0] for _, logs_ in errors)
    reasons = _rows(
        lake, "select gate_component, reason from failure_reasons where reason is not null"
    )
    assert reasons and all(reason == "no crash" for _, reason in reasons)


@pytest.mark.slow
def test_reingest_is_a_no_op_and_a_new_eval_id_is_new_runs(
    logs: list[Path], lake: Path, tmp_path: Path
) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    before = _rows(lake, "select count(*) from task_runs")[0][0]
    again = pipeline("ingest", logs[0].parent, "--lake", lake)
    assert again.returncode == 0, again.stderr
    assert _rows(lake, "select count(*) from task_runs")[0][0] == before
    # The same log moved elsewhere holds the same records: duplicates, not clashes.
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.copy(logs[0], moved / logs[0].name)
    # A re-run of the first log (a new eval id), written by Inspect as a .json log, beside
    # an mcp-xray report (.json too) and a broken .eval file.
    rerun = read_eval_log(str(logs[0]))
    rerun.eval.eval_id = rerun.eval.eval_id + "-rerun"
    for sample in rerun.samples or []:  # each attempt of a re-run has a uuid of its own
        sample.uuid = f"{sample.uuid}-rerun"
    write_eval_log(rerun, str(moved / "rerun.json"), format="json")
    shutil.copy(REAL_REPORTS / "00_bing-cn-mcp.json", moved)
    (moved / "broken.eval").write_bytes(b"PK\x03\x04 not a zip at all")
    assert is_inspect_log(moved / "rerun.json")
    assert not is_inspect_log(moved / "00_bing-cn-mcp.json")
    done = pipeline("run", moved, "--lake", lake)
    assert done.returncode == 0, done.stderr + done.stdout
    samples = len(rerun.samples or [])
    assert _rows(lake, "select count(*) from task_runs")[0][0] == before + samples
    assert _rows(lake, "select count(*) from surface_runs")[0][0] == 1
    held = _rows(lake, "select source, line, reason from quarantine")
    assert [(Path(s).name, line) for s, line, _ in held] == [("broken.eval", 0)]
    assert "not a readable Inspect AI log" in held[0][2]
    assert pipeline("check", "--lake", lake).returncode == 0


@pytest.mark.slow
def test_compare_between_the_two_versions(logs: list[Path], lake: Path) -> None:
    done = pipeline(
        "compare", "--agent", AGENT, "--baseline", "1.0", "--candidate", "2.0",
        "--lake", lake, "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    per_problem = _rows(
        lake,
        "select problem_id, agent_version, avg(score) from task_runs where status = 'scored' "
        "and json_extract_string(record, '$.grade.metadata.inspect.eval_id') not like "
        "'%-rerun' group by all",
    )
    means = {(p, v): s for p, v, s in per_problem}
    paired = sorted({p for p, _ in means if (p, "1.0") in means and (p, "2.0") in means})
    assert report["paired_problems"] == len(paired) == 2 * PROBLEMS
    delta = sum(means[(p, "2.0")] - means[(p, "1.0")] for p in paired) / len(paired)
    assert report["delta"] == pytest.approx(delta, abs=1e-12)


def test_a_missing_extra_is_one_line_naming_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real_import = builtins.__import__

    def no_inspect(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "inspect_ai" or name.startswith("inspect_ai."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_inspect)
    log = tmp_path / "a.eval"
    log.write_bytes(b"PK\x03\x04")
    done = pipeline("ingest", log, "--lake", tmp_path / "lake")
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "pip install 'agent-grades-pipeline[inspect]'" in lines[0]


# Unit tests of the mapping (no log needed).


def test_letter_grades_and_numbers_map_like_inspects_value_to_float() -> None:
    assert [to_subscore(v) for v in ("C", "P", "I", "N", "yes", "False", "0.25")] == [
        1.0,
        0.5,
        0.0,
        0.0,
        1.0,
        0.0,
        0.25,
    ]
    assert [to_subscore(v) for v in (True, False, 3, 0.5)] == [1.0, 0.0, 3.0, 0.5]
    assert to_subscore(float("nan")) is None
    # Not a grade: kept as it is, so validation refuses it with a reason.
    assert to_subscore("maybe") == "maybe"
    assert to_subscore([1, 2]) == [1, 2]


def test_the_letter_table_is_inspects_own() -> None:
    """The table is written out (extract.py reads no inspect_ai types); Inspect's own
    value_to_float and its grade constants give the same for every word of it."""
    scorer = pytest.importorskip("inspect_ai.scorer")
    from pipeline.sources.inspect.columns import LETTER_GRADES

    theirs = scorer.value_to_float()
    letters = (scorer.CORRECT, scorer.PARTIAL, scorer.INCORRECT, scorer.NOANSWER)
    assert set(letters) <= set(LETTER_GRADES)
    for word in [*LETTER_GRADES, *(w.upper() for w in LETTER_GRADES), "True", "No"]:
        assert to_subscore(word) == theirs(word), word


def test_components_of_one_scorer_and_of_several() -> None:
    one = components({"grader": ScoreParts({"a": 1, "b": "C"}, {"a": {"reason": "x"}}, "why")})
    assert one.subscores == {"a": 1.0, "b": 1.0}
    assert one.metadata == {"a": {"reason": "x"}}
    assert one.explanation == "why"
    letter = components({"match": ScoreParts("I")})
    assert letter.subscores == {"match": 0.0}
    several = components(
        {"s1": ScoreParts({"a": 0.5}, {"k": 1}, "e1"), "s2": ScoreParts(float("nan"))}
    )
    assert several.subscores == {"s1/a": 0.5}
    assert several.unscored == ["s2"]
    assert several.metadata == {"s1": {"k": 1}}
    assert several.explanation == {"s1": "e1"}


def test_weights_metadata_run_ids_and_usage() -> None:
    assert equal_weights({"a": 1, "b": 0, "c": 0, "d": 0}) == {
        "a": 0.25,
        "b": 0.25,
        "c": 0.25,
        "d": 0.25,
    }
    meta = grade_metadata({"x": 1, "sample": 2}, "e", {"env_type": "exploit"}, {"eval_id": "E"})
    assert meta == {
        "x": 1,
        "score_metadata": {"sample": 2},
        "explanation": "e",
        "sample": {"env_type": "exploit"},
        "inspect": {"eval_id": "E"},
    }
    assert run_id("E", "p1", 2) == "inspect:E/p1#2"
    long = run_id("E", "x" * 300, 1)
    assert len(long) <= 256 and long.endswith("#1") and long != run_id("E", "y" * 300, 1)
    usage = usage_totals([(100, 0.5), (20, None)])
    assert (usage.tokens, usage.cost_usd) == (120, 0.5)
    none = usage_totals([])
    assert (none.tokens, none.cost_usd) == (None, None)


def test_the_rubric_sources_inspect_table() -> None:
    rubric = parse_rubric(
        {"sources": {"inspect": {"agent_field": "team", "env_types": {"ctf": "exploit"}}}}
    )
    assert rubric.inspect == InspectMapping(agent_field="team", env_types={"ctf": "exploit"})
    assert parse_rubric(dict(rubric.resolved)).rubric_id == rubric.rubric_id
    assert parse_rubric({}).inspect == InspectMapping()
    assert "sources" not in parse_rubric({}).resolved
    for bad, key in (
        ({"sources": {"other": {}}}, "sources.other"),
        ({"sources": {"inspect": {"agent": "a"}}}, "sources.inspect.agent"),
        ({"sources": {"inspect": {"env_types": {"t": "nope"}}}}, "sources.inspect.env_types.t"),
        ({"sources": {"inspect": {"agent_field": ""}}}, "sources.inspect.agent_field"),
    ):
        with pytest.raises(RubricError, match=f"rubric key {key} ="):
            parse_rubric(bad)
    with pytest.raises(ValueError, match="expected a table"):
        parse_mapping([])


@pytest.mark.slow
def test_the_rubric_mapping_names_env_type_agent_and_version(logs: list[Path]) -> None:
    from inspect_ai.log import read_eval_log

    from pipeline.sources.inspect.table import sample_record

    log = read_eval_log(str(logs[0]))
    sample = (log.samples or [])[0]
    mapping = InspectMapping(
        agent_field="nobody",
        agent_version_field="none",
        env_type_field="absent",
        env_types={log.eval.task: "detect"},
    )
    record = sample_record(log, sample, mapping)
    assert record["env_type"] == "detect"
    assert record["agent_version"] == log.eval.model  # the model when no field names one
    assert record["agent"] == "no_model"  # the solver's name when no field names one
    assert record["trial"] == sample.epoch and record["problem_id"] == str(sample.id)


@pytest.mark.slow
def test_run_reads_logs_under_the_rubrics_mapping(logs: list[Path], tmp_path: Path) -> None:
    """``run --rubric`` hands the rubric's [sources.inspect] to the reader: with the metadata
    keys renamed away, the task map gives each run its env type."""
    rubric = tmp_path / "mapped.toml"
    rubric.write_text(
        '[sources.inspect]\nenv_type_field = "kind"\nagent_version_field = "release"\n'
        '[sources.inspect.env_types]\nexploit_t = "detect"\npatch_t = "patch"\n'
    )
    first = next(p for p in logs if "exploit-t" in p.name)
    lake = tmp_path / "lake"
    done = pipeline("run", first, "--lake", lake, "--rubric", rubric)
    assert done.returncode == 0, done.stderr + done.stdout
    rows = _rows(lake, "select distinct env_type, agent, agent_version from task_runs")
    assert rows == [("detect", AGENT, "mockllm/model")]


class Sample(NamedTuple):
    """What the tests' stand-ins for Inspect's log API read: a sample, as its (id, epoch)."""

    id: str
    epoch: int


def _directory(samples: set[tuple[str, int]], size: int) -> members.Directory:
    """A .eval log's directory holding ``samples``, each member ``size`` bytes."""
    held = {members.sample_member(*key): size for key in samples}
    return members.Directory(0, held)


@pytest.mark.parametrize("naming", ["named as Inspect names them", "named otherwise"])
def test_samples_the_log_lacks_are_counted_in_the_logs_order(naming: str) -> None:
    """An eval stopped early lists samples it never wrote: those are counted, the rest read
    in the log's order (ids x epochs). Its directory says which those are, so none is
    asked for; with members named otherwise, a batch that names one is read sample by
    sample, and Inspect says which."""
    from types import SimpleNamespace

    from pipeline.sources.inspect.table import Unread, _eval_samples

    written = {("a", 1), ("a", 2), ("c", 2)}
    asked: list[Any] = []

    class Api:
        @staticmethod
        def read_eval_log_samples_by_id(path: str, keys: Any, **_: Any) -> list[Any]:
            asked.extend(keys)
            if any(key not in written for key in keys):
                raise IndexError("missing")
            return [Sample(*key) for key in keys]

        @staticmethod
        def read_eval_log_sample(path: str, id: str, epoch: int, **_: Any) -> Any:
            if (id, epoch) not in written:
                raise IndexError("missing")
            return Sample(id, epoch)

    header = SimpleNamespace(
        eval=SimpleNamespace(
            dataset=SimpleNamespace(sample_ids=["a", "b", "c"]),
            config=SimpleNamespace(epochs=2),
        )
    )
    directory = _directory(written, 10)
    if naming == "named otherwise":
        directory = members.Directory(0, {f"samples/x{i}.json": 10 for i in range(3)})
    got = list(_eval_samples(Api, Path("x.eval"), header, directory, 2**30))
    # The missing ones are counted, after the samples read, never passed over.
    assert got == [
        ("a", 1),
        ("a", 2),
        ("c", 2),
        Unread(
            "3 sample(s) the log's header lists are not in it (an eval stopped early?): "
            "b (epoch 1), b (epoch 2), c (epoch 1)"
        ),
    ]
    assert (set(asked) == written) == (naming == "named as Inspect names them")


def test_samples_are_read_in_batches_of_bounded_bytes_and_each_is_the_one_asked_for() -> None:
    """Inspect keeps a sample's input whole: a batch holds at most READ_BYTES of members
    (one larger alone), so 256 samples of long inputs are not held at once. A member that
    holds another sample than its name says is counted in its place, not landed as that
    one."""
    from types import SimpleNamespace

    batches: list[list[Any]] = []

    class Api:
        @staticmethod
        def read_eval_log_samples_by_id(path: str, keys: Any, **_: Any) -> list[Any]:
            batches.append(list(keys))
            return [Sample("z", 1) if key == ("e", 1) else Sample(*key) for key in keys]

    header = SimpleNamespace(
        eval=SimpleNamespace(
            dataset=SimpleNamespace(sample_ids=list("abcdef")), config=SimpleNamespace(epochs=1)
        )
    )
    third = table.READ_BYTES // 3
    sizes = {"a": third, "b": third, "c": third, "d": 2 * table.READ_BYTES, "e": 1, "f": 1}
    directory = members.Directory(0, {members.sample_member(k, 1): v for k, v in sizes.items()})
    got = list(table._eval_samples(Api, Path("x.eval"), header, directory, 2**40))
    assert batches == [[("a", 1), ("b", 1), ("c", 1)], [("d", 1)], [("e", 1), ("f", 1)]]
    assert got == [
        ("a", 1),
        ("b", 1),
        ("c", 1),
        ("d", 1),
        table.Unread(
            "sample e epoch 1 is not read: its member holds sample z epoch 1 (the log's "
            "members are misnamed)"
        ),
        ("f", 1),
    ]


def test_a_sample_that_cannot_be_read_is_quarantined_in_its_place() -> None:
    """One corrupt sample fails its batch: the batch is read sample by sample, the corrupt
    one is an Unread where it stood, and every other sample is read (the whole log was
    quarantined as 'not readable')."""
    from types import SimpleNamespace

    class Api:
        @staticmethod
        def read_eval_log_samples_by_id(path: str, keys: Any, **_: Any) -> list[Any]:
            raise ValueError("lexical error: invalid string in json text")

        @staticmethod
        def read_eval_log_sample(path: str, id: str, epoch: int, **_: Any) -> Any:
            if (id, epoch) == ("a", 2):
                raise ValueError("lexical error: invalid string in json text")
            return Sample(id, epoch)

    header = SimpleNamespace(
        eval=SimpleNamespace(
            dataset=SimpleNamespace(sample_ids=["a", "b"]), config=SimpleNamespace(epochs=2)
        )
    )
    directory = _directory({("a", 1), ("a", 2), ("b", 1), ("b", 2)}, 10)
    got = list(table._eval_samples(Api, Path("x.eval"), header, directory, 2**30))
    assert got == [
        ("a", 1),
        table.Unread(
            "sample a epoch 2 cannot be read (ValueError: lexical error: invalid string in "
            "json text)"
        ),
        ("b", 1),
        ("b", 2),
    ]


def test_a_sample_past_the_expansion_limit_is_counted_in_its_place() -> None:
    """A 5-byte header, then a (10 bytes), b (100), c (10), d (missing from the log), e
    (10), and x, a member the header does not list. With a limit of 40 bytes, 35 are left
    for samples: a takes 10; b does not fit in the 25 left and is counted in its place; c
    and e take 20 of them, d none; d and x are counted at the end."""
    from types import SimpleNamespace

    sizes = {"a": 10, "b": 100, "c": 10, "e": 10, "x": 10}
    read: list[Any] = []

    class Api:
        @staticmethod
        def read_eval_log_samples_by_id(path: str, keys: Any, **_: Any) -> list[Any]:
            if any(sample_id not in sizes for sample_id, _ in keys):
                raise IndexError("missing")
            read.extend(keys)
            return [Sample(*key) for key in keys]

        @staticmethod
        def read_eval_log_sample(path: str, id: str, epoch: int, **_: Any) -> Any:
            if id not in sizes:
                raise IndexError("missing")
            read.append((id, epoch))
            return Sample(id, epoch)

    header = SimpleNamespace(
        eval=SimpleNamespace(
            dataset=SimpleNamespace(sample_ids=["a", "b", "c", "d", "e"]),
            config=SimpleNamespace(epochs=1),
        )
    )
    held = {members.sample_member(key, 1): size for key, size in sizes.items()}
    directory = members.Directory(5, held)
    got = list(table._eval_samples(Api, Path("x.eval"), header, directory, 40))
    assert got == [
        ("a", 1),
        table.Unread(
            "sample b epoch 1 is not read: it decompresses to 100 bytes, over the 25 bytes "
            "left of the limit of 40 bytes for a log (the limit is set by "
            "PIPELINE_MAX_EXPANDED_BYTES; the nightly reads the log again only once it "
            "changes: ingest it again under a higher limit)"
        ),
        ("c", 1),
        ("e", 1),
        table.Unread(
            "1 sample(s) the log's header lists are not in it (an eval stopped early?): d (epoch 1)"
        ),
        table.Unread(
            "1 sample(s) in the log are not among the sample ids its header lists: not read "
            "(re-write the log with a current inspect-ai)"
        ),
    ]
    assert ("b", 1) not in read
    # At 135 bytes b fits exactly (130 for the four samples): every sample is read.
    read.clear()
    whole = list(table._eval_samples(Api, Path("x.eval"), header, directory, 135))
    assert whole[:4] == read == [("a", 1), ("b", 1), ("c", 1), ("e", 1)]
    assert whole[4:] == got[4:]
    # A header that takes the whole limit leaves none: nothing is read, everything counted.
    read.clear()
    none = list(table._eval_samples(Api, Path("x.eval"), header, directory, 4))
    assert read == [] and len(none) == 6
    assert none[0] == table.Unread(
        "sample a epoch 1 is not read: it decompresses to 10 bytes, over the 0 bytes left of "
        "the limit of 4 bytes for a log (the limit is set by PIPELINE_MAX_EXPANDED_BYTES; the "
        "nightly reads the log again only once it changes: ingest it again under a higher "
        "limit)"
    )


@pytest.mark.slow
def test_a_sample_past_the_expansion_limit_lands_once_the_limit_allows(
    logs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A .eval log is a ZIP: as for a gzip file, what its members decompress to is bounded
    # (a log that expands a thousandfold, or one sample of gigabytes), by the sizes its ZIP
    # directory records, before any member is decompressed. Here the second sample's member
    # is padded with 100,000 spaces (the same sample), past what the limit leaves it.
    import zipfile

    from inspect_ai.log import read_eval_log

    from pipeline.core.settings import MAX_EXPANDED_BYTES_ENV, MAX_REPORT_BYTES_ENV

    header = read_eval_log(str(logs[0]), header_only=True)
    order = [
        members.sample_member(sample_id, epoch)
        for sample_id in header.eval.dataset.sample_ids
        for epoch in range(1, EPOCHS + 1)
    ]
    padding = b" " * 100_000
    log = _rewritten(
        logs[0],
        tmp_path / "inbox" / "a.eval",
        lambda n: True,
        lambda n, data: data + padding if n == order[1] else data,
    )
    with zipfile.ZipFile(log) as archive:
        sizes = {info.filename: info.file_size for info in archive.infolist()}
    header_bytes = sizes["header.json"] + sizes["reductions.json"]
    # Room for every other sample, exactly: not for the padded one as well.
    limit = header_bytes + sum(sizes[name] for name in order) - sizes[order[1]]
    lake = tmp_path / "lake"
    monkeypatch.setenv(MAX_EXPANDED_BYTES_ENV, str(limit))
    done = pipeline("ingest", log.parent, "--lake", lake)
    assert done.returncode == 0, done.stderr
    assert _rows(lake, "select count(*) from task_runs") == [(len(order) - 1,)]
    sample_id, epoch = order[1].removeprefix("samples/").removesuffix(".json").split("_epoch_")
    left = limit - header_bytes - sizes[order[0]]
    assert _rows(lake, "select line, reason from quarantine") == [
        (
            2,
            f"sample {sample_id} epoch {epoch} is not read: it decompresses to "
            f"{sizes[order[1]]} bytes, over the {left} bytes left of the limit of {limit} "
            f"bytes for a log (the limit is set by {MAX_EXPANDED_BYTES_ENV}; the nightly reads "
            "the log again only once it changes: ingest it again under a higher limit)",
        )
    ]
    # Under the default limit it lands, and its row is resolved.
    monkeypatch.delenv(MAX_EXPANDED_BYTES_ENV)
    assert pipeline("ingest", log.parent, "--lake", lake).returncode == 0
    assert _rows(lake, "select count(*) from task_runs") == [(len(order),)]
    assert _rows(lake, "select line, outcome from quarantine_resolved") == [(2, "landed")]
    assert pipeline("check", "--lake", lake).returncode == 0
    # The members read with the header are bounded as a report file is: over the limit, the
    # log is quarantined whole, and none of it decompressed.
    monkeypatch.setenv(MAX_REPORT_BYTES_ENV, str(header_bytes - 1))
    whole = tmp_path / "whole"
    assert pipeline("ingest", log.parent, "--lake", whole).returncode == 0
    assert _rows(whole, "select line, reason from quarantine") == [
        (
            0,
            f"log header is {header_bytes} bytes, over the limit of {header_bytes - 1} bytes "
            f"(the limit is set by {MAX_REPORT_BYTES_ENV})",
        )
    ]


@pytest.mark.slow
def test_a_sample_nested_past_what_python_recurses_is_quarantined_alone(
    logs: list[Path], tmp_path: Path
) -> None:
    # Inspect reads a sample whose metadata nests 2000 levels; turned into a task grade it
    # goes past Python's recursion limit. That sample alone is quarantined in its place:
    # the log used to stop there, and every sample after it never landed.
    import zipfile

    with zipfile.ZipFile(logs[0]) as archive:
        second = sorted(n for n in archive.namelist() if n.startswith("samples/"))[1]
        count = sum(n.startswith("samples/") for n in archive.namelist())

    def deep(name: str, data: bytes) -> bytes:
        if name != second:
            return data
        sample = json.loads(data)
        sample["metadata"] = {**(sample.get("metadata") or {}), "deep": "NESTED"}
        nested = '{"a":' * 2000 + "1" + "}" * 2000
        return json.dumps(sample).replace('"NESTED"', nested).encode()

    log = _rewritten(logs[0], tmp_path / "inbox" / "a.eval", lambda n: True, deep)
    lake = tmp_path / "lake"
    done = pipeline("ingest", log.parent, "--lake", lake)
    assert done.returncode == 0, done.stderr
    assert _rows(lake, "select count(*) from task_runs") == [(count - 1,)]
    ((line, reason),) = _rows(lake, "select line, reason from quarantine")
    assert reason.startswith("sample ") and "cannot be made a task grade (RecursionError" in reason
    landed = {at for (at,) in _rows(lake, "select line from task_runs")}
    assert landed == set(range(1, count + 1)) - {line}  # every other sample, in its place


@pytest.mark.slow
def test_a_member_other_than_its_zip_directory_says_is_not_read(
    logs: list[Path], tmp_path: Path
) -> None:
    # The sizes a log's ZIP directory records bound what is read; a member that decompresses
    # past its own would be held whole, and one whose CRC-32 differs has other bytes than
    # Inspect wrote (a damaged or altered log): its sample is quarantined in its place, or,
    # for the header, the log whole. Inspect's members are Zstandard (the log copied as it
    # wrote it).
    import zipfile

    from tests.ziplogs import CRC_AT, recorded, understated

    with zipfile.ZipFile(logs[0]) as archive:
        samples = sorted(n for n in archive.namelist() if n.startswith("samples/"))
    for folder in ("sample", "header"):
        (tmp_path / folder).mkdir()
    copied = [
        Path(shutil.copy(logs[0], tmp_path / folder / "a.eval")) for folder in ("sample", "header")
    ]
    sample = recorded(understated(copied[0], samples[1], 100), samples[2], CRC_AT, 1)
    lake = tmp_path / "lake"
    assert pipeline("ingest", sample.parent, "--lake", lake).returncode == 0
    assert _rows(lake, "select count(*) from task_runs") == [(len(samples) - 2,)]
    reasons = [reason for (reason,) in _rows(lake, "select reason from quarantine order by line")]
    then = (
        "the log's ZIP directory records for it, so the file was damaged or altered after "
        "Inspect wrote it (Inspect would read the member to its end, however large, and not "
        "check it): copy the log again from where Inspect wrote it"
    )
    assert sorted(reason.split(": its member ")[1] for reason in reasons) == sorted(
        [
            f"{samples[1]} holds more than the 100 bytes {then}",
            f"{samples[2]} does not match the CRC-32 {then}",
        ]
    )
    header = understated(copied[1], "header.json", 100)
    whole = tmp_path / "whole"
    assert pipeline("ingest", header.parent, "--lake", whole).returncode == 0
    assert _rows(whole, "select line, reason from quarantine") == [
        (0, f"log header: its member header.json holds more than the 100 bytes {then}")
    ]


@pytest.mark.slow
@pytest.mark.parametrize("which", [0, 1])
def test_a_member_whose_compressed_bytes_are_damaged_costs_its_sample_alone(
    logs: list[Path], tmp_path: Path, which: int
) -> None:
    # Its size is counted as it decompresses before Inspect reads it: a member that does not
    # decompress is that sample's to quarantine, whether first in the log or after others.
    # (The log as Inspect wrote it: its members Zstandard, which _rewritten's are not.)
    import zipfile

    from tests.ziplogs import corrupted

    with zipfile.ZipFile(logs[0]) as archive:
        samples = sorted(n for n in archive.namelist() if n.startswith("samples/"))
    (tmp_path / "inbox").mkdir()
    log = corrupted(Path(shutil.copy(logs[0], tmp_path / "inbox" / "a.eval")), samples[which])
    lake = tmp_path / "lake"
    assert pipeline("ingest", log.parent, "--lake", lake).returncode == 0
    assert _rows(lake, "select count(*) from task_runs") == [(len(samples) - 1,)]
    ((line, reason),) = _rows(lake, "select line, reason from quarantine")
    assert line > 0 and "cannot be read (ZstdError" in reason, reason


def test_a_real_log_missing_its_samples_says_so_and_one_with_a_bad_sample_keeps_the_rest(
    logs: list[Path], tmp_path: Path
) -> None:
    import zipfile

    source = logs[0]
    with zipfile.ZipFile(source) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    samples = sorted(name for name in members if name.startswith("samples/"))
    hollow, broken = tmp_path / "hollow" / "a.eval", tmp_path / "broken" / "a.eval"
    for path, keep in ((hollow, lambda n: n not in samples), (broken, lambda n: True)):
        path.parent.mkdir()
        with zipfile.ZipFile(path, "w") as out:
            for name, data in members.items():
                if keep(name):
                    out.writestr(
                        name, b"{not json" if path == broken and name == samples[0] else data
                    )
    lake = tmp_path / "lake"
    hollow_report = pipeline("ingest", hollow, "--lake", lake)
    assert hollow_report.returncode == 0, hollow_report.stderr
    broken_report = pipeline("ingest", broken, "--lake", tmp_path / "lake2")
    assert broken_report.returncode == 0, broken_report.stderr
    with duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True) as con:
        (reason,) = con.execute("select reason from quarantine").fetchone() or ("",)
    assert reason.startswith(f"{len(samples)} sample(s) the log's header lists are not in it")
    with duckdb.connect(str(tmp_path / "lake2" / "warehouse.duckdb"), read_only=True) as con:
        runs = con.execute("select count(*) from task_runs").fetchall()
        bad = con.execute("select reason from quarantine").fetchall()
    assert runs == [(len(samples) - 1,)]
    assert len(bad) == 1 and "cannot be read" in bad[0][0]


def _rewritten(source: Path, path: Path, keep: Any, change: Any = None) -> Path:
    """A copy of the .eval log ``source`` at ``path`` with the members ``keep`` accepts,
    each passed through ``change`` (name, bytes) -> bytes when given."""
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(path, "w") as out:
        for name in archive.namelist():
            if keep(name):
                data = archive.read(name)
                out.writestr(name, change(name, data) if change else data)
    return path


@pytest.mark.slow
def test_a_sample_written_twice_is_one_sample(logs: list[Path], tmp_path: Path) -> None:
    # An eval_retry of a killed eval writes the samples that were in flight again, under
    # the same member names; a reader gets the last. All land, and nothing is "unlisted".
    import warnings
    import zipfile

    log = _rewritten(logs[0], tmp_path / "inbox" / "a.eval", lambda n: True)
    with zipfile.ZipFile(log) as archive:
        samples = sorted(n for n in archive.namelist() if n.startswith("samples/"))
    with zipfile.ZipFile(log, "a") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile's "Duplicate name"
        archive.writestr(samples[0], zipfile.ZipFile(logs[0]).read(samples[0]))
    lake = tmp_path / "lake"
    assert pipeline("ingest", log.parent, "--lake", lake).returncode == 0
    assert _rows(lake, "select count(*) from task_runs") == [(len(samples),)]
    assert _rows(lake, "select count(*) from quarantine") == [(0,)]


@pytest.mark.slow
def test_a_running_log_is_read_once_the_eval_ends(logs: list[Path], tmp_path: Path) -> None:
    # While an eval runs its .eval log has no header.json (Inspect reads the start journal:
    # status "started") and only the samples done so far.
    import zipfile

    with zipfile.ZipFile(logs[0]) as archive:
        samples = sorted(n for n in archive.namelist() if n.startswith("samples/"))
    log = tmp_path / "inbox" / "a.eval"
    _rewritten(logs[0], log, lambda n: n != "header.json" and n not in samples[2:])
    lake = tmp_path / "lake"
    running = pipeline("ingest", log.parent, "--lake", lake)
    assert running.returncode == 0, running.stderr
    assert _rows(lake, "select line, reason from quarantine") == [
        (0, f"{STILL_RUNNING} (log status 'started'): it is read once the eval ends")
    ]
    assert _rows(lake, "select count(*) from task_runs") == [(0,)]
    # Read again while it runs: counted as seen, and the note says why it is read again.
    again = pipeline("ingest", log.parent, "--lake", lake)
    assert again.returncode == 0, again.stderr
    assert summary_counts(again) | {"s": "-"} == {
        **dict.fromkeys(("files", "lines", "seen"), 1),
        **dict.fromkeys(("task", "surface", "quarantined", "duplicates", "blank"), 0),
        "s": "-",
    }
    for done in (running, again):  # one note a read
        assert f"note: {log}: {table.RUNNING_NOTE}" in done.stdout.replace("\n", " ")
        assert done.stdout.count(STILL_RUNNING) == 1
    assert _rows(lake, "select count(*) from quarantine") == [(1,)]
    shutil.copyfile(logs[0], log)
    ended = pipeline("ingest", log.parent, "--lake", lake)
    assert ended.returncode == 0, ended.stderr
    # every sample lands, numbered once; the running log's row is resolved, not left beside them
    assert _rows(lake, "select count(*), count(distinct line) from task_runs") == [
        (len(samples), len(samples))
    ]
    assert _rows(lake, "select count(*) from quarantine") == [(0,)]
    assert _rows(lake, "select line, outcome from quarantine_resolved") == [(0, "superseded")]
    assert pipeline("check", "--lake", lake).returncode == 0


@pytest.mark.slow
def test_a_sample_read_again_whole_resolves_its_row(logs: list[Path], tmp_path: Path) -> None:
    # A sample that could not be read (its row has no text) lands when the log is mended:
    # the row is resolved, so quarantine and check no longer name the line.
    import zipfile

    with zipfile.ZipFile(logs[0]) as archive:
        first = sorted(n for n in archive.namelist() if n.startswith("samples/"))[0]
    log = tmp_path / "inbox" / "a.eval"
    _rewritten(logs[0], log, lambda n: True, lambda n, data: b"{not json" if n == first else data)
    lake = tmp_path / "lake"
    assert pipeline("ingest", log.parent, "--lake", lake).returncode == 0
    ((line, raw),) = _rows(lake, "select line, raw from quarantine")
    assert raw is None
    shutil.copyfile(logs[0], log)
    assert pipeline("ingest", log.parent, "--lake", lake).returncode == 0
    assert _rows(lake, "select count(*) from quarantine") == [(0,)]
    assert _rows(lake, "select line, raw, outcome from quarantine_resolved") == [
        (line, None, "landed")
    ]
    assert pipeline("check", "--lake", lake).returncode == 0


@pytest.mark.slow
def test_a_json_log_stopped_early_counts_what_it_lacks(logs: list[Path], tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    whole = read_eval_log(str(logs[0]))
    assert whole.samples is not None
    listed = len(whole.samples)
    whole.samples = whole.samples[:2]
    log = tmp_path / "inbox" / "a.json"
    log.parent.mkdir()
    write_eval_log(whole, str(log), format="json")
    lake = tmp_path / "lake"
    assert pipeline("ingest", log.parent, "--lake", lake).returncode == 0
    assert _rows(lake, "select count(*) from task_runs") == [(2,)]
    ((line, reason),) = _rows(lake, "select line, reason from quarantine")
    assert line == 3
    assert reason.startswith(f"{listed - 2} sample(s) the log's header lists are not in it")


def _json_log(source: Path, path: Path, change: Any = None) -> Path:
    """The .eval log ``source`` written by Inspect as a .json log at ``path``, its document
    passed through ``change`` (document -> None, in place) when given."""
    from inspect_ai.log import read_eval_log, write_eval_log

    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(read_eval_log(str(source)), str(path), format="json")
    if change is not None:
        document = json.loads(path.read_text())
        change(document)
        path.write_text(json.dumps(document))  # NaN as Inspect writes it, bare
    return path


def _frames(path: Path) -> list[tuple[int, str | None, str | None]]:
    """What the reader makes of a log: (line, raw, reason) in order."""
    from pipeline.sources.limits import ReadLimits

    limits = ReadLimits(record_bytes=2**24, report_bytes=2**27, depth=64, expanded_bytes=2**33)
    got: list[tuple[int, str | None, str | None]] = []
    for frame, _ in table.inspect_frames(path, limits):
        got.extend(frame.select("line", "raw", "file_problem").iter_rows())
    return got


def _scores(document: dict[str, Any], at: int, value: Any = "high") -> None:
    document["samples"][at]["scores"] = value


def _nan_metric(document: dict[str, Any]) -> None:
    """The header's first metric NaN, as Inspect writes a mean over no scores."""
    document["results"]["scores"][0]["metrics"]["mean"]["value"] = math.nan


BAD_SAMPLES = {
    # Inspect's EvalSample refuses each, and read_eval_log the whole log for it.
    "scores not an object": (
        lambda doc: _scores(doc, 1),
        "sample ex-1 epoch 1 cannot be read (ValidationError: 1 validation error for "
        "EvalSample, the first at scores: Input should be a valid dictionary)",
    ),
    "no id": (
        lambda doc: doc["samples"][1].pop("id"),
        "the log's sample at position 2 (its id or epoch is unreadable; it is one of ex-1 "
        "(epoch 1), which no other sample is) cannot be read (ValidationError: 1 validation "
        "error for EvalSample, the first at id: Field required)",
    ),
    "not an object": (
        lambda doc: doc["samples"].__setitem__(1, 7),
        "the log's sample at position 2 (its id or epoch is unreadable; it is one of ex-1 "
        "(epoch 1), which no other sample is) cannot be read (ValidationError: 1 validation "
        "error for EvalSample, the first at the top: Input should be a valid dictionary or "
        "instance of EvalSample)",
    ),
    # A NaN in its header (a metric over no scores) has Inspect parse the whole log, samples
    # and all, for the header alone.
    "scores not an object, a NaN metric": (
        lambda doc: (_scores(doc, 1), _nan_metric(doc)),
        "sample ex-1 epoch 1 cannot be read (ValidationError: 1 validation error for "
        "EvalSample, the first at scores: Input should be a valid dictionary)",
    ),
}


@pytest.mark.parametrize("bad", list(BAD_SAMPLES))
def test_a_json_log_with_a_bad_sample_keeps_the_rest(
    logs: list[Path], tmp_path: Path, bad: str
) -> None:
    # Inspect validates a .json log whole: one sample it refuses failed the read, and the
    # log was quarantined whole at line 0, its good samples with it.
    change, reason = BAD_SAMPLES[bad]
    good = _frames(_json_log(logs[0], tmp_path / "good.json"))
    got = _frames(_json_log(logs[0], tmp_path / "bad.json", change))
    assert [line for line, _, _ in good] == list(range(1, len(good) + 1))
    assert got[0] == good[0] and got[2 : len(good)] == good[2:]
    line, raw, why = got[1]
    assert (line, raw) == (2, None)
    assert why is not None and why.startswith(reason + ": "), why
    assert "the log is read again once it changes" in why
    # A sample without an id is the listed one no other sample is: told in its place, not
    # counted again after the samples.
    assert len(got) == len(good)


def _legacy_score(document: dict[str, Any]) -> None:
    """Each scored sample as an old inspect-ai wrote it: one ``score``, no ``scores``; a
    number, so its component is named after the scorer Inspect gives it."""
    for sample in document["samples"]:
        if sample.get("scores"):
            score = sample.pop("scores")["components"]
            sample["score"] = {**score, "value": min(score["value"].values())}


@pytest.mark.parametrize(
    "change",
    [None, _legacy_score, _nan_metric],
    ids=["as written", "legacy score", "a NaN metric"],
)
def test_a_valid_json_log_is_read_as_inspects_whole_read_reads_it(
    logs: list[Path], tmp_path: Path, change: Any
) -> None:
    # What landed before samples were read one by one: read_eval_log's samples, in order.
    from inspect_ai.log import read_eval_log

    for at, source in enumerate(logs):
        path = _json_log(source, tmp_path / f"{at}.json", change)
        header = read_eval_log(str(path), header_only=True)
        samples = read_eval_log(str(path)).samples or []
        records = [table.sample_record(header, s, InspectMapping()) for s in samples]
        assert _frames(path) == [
            (line, json.dumps(record, default=str), None)
            for line, record in enumerate(records, start=1)
        ]
        assert all(r["grade"]["subscores"] or r["grade"]["env_internal_failure"] for r in records)


def test_a_json_log_whose_every_sample_is_bad_quarantines_each_in_its_place(
    logs: list[Path], tmp_path: Path
) -> None:
    def spoil(document: dict[str, Any]) -> None:
        for at in range(len(document["samples"])):
            _scores(document, at, [1])

    got = _frames(_json_log(logs[0], tmp_path / "a.json", spoil))
    count = len(got)
    assert count == 2 * (PROBLEMS + 1)  # not one entry at line 0 for the whole log
    assert [line for line, _, _ in got] == list(range(1, count + 1))
    assert all(raw is None and why and " cannot be read (" in why for _, raw, why in got)
    assert got[0][2] is not None and got[0][2].startswith("sample ex-0 epoch 1 cannot be read")


def test_a_json_logs_refused_samples_are_counted_once_in_their_place(
    logs: list[Path], tmp_path: Path
) -> None:
    # A refused sample the header lists is in the log, not lacking; one it does not list is
    # quarantined in its place, not counted again as unlisted; nor is a good sample written
    # twice, read in its place (it was also said to be "not read").
    def change(document: dict[str, Any]) -> None:
        samples = document["samples"]
        _scores(document, 1)
        samples.extend([dict(samples[0]), {"id": "zz", "epoch": 1}])

    good = _frames(_json_log(logs[0], tmp_path / "good.json"))
    got = _frames(_json_log(logs[0], tmp_path / "bad.json", change))
    count = len(good)
    assert [line for line, _, _ in got] == list(range(1, count + 3))
    assert got[count] == (count + 1, good[0][1], None)  # the copy, a duplicate of line 1
    assert [why for _, _, why in got[count + 1 :]] == [
        "sample zz epoch 1 cannot be read (ValidationError: 2 validation errors for "
        f"EvalSample, the first at input: Field required): {table.MEND_JSON_SAMPLE}",
    ]
    assert got[1][2] is not None and got[1][2].startswith("sample ex-1 epoch 1 cannot be")


@pytest.mark.parametrize(
    ("samples", "expected"),
    [
        (None, "the log's header lists are not in it"),
        ({"ex-0": {}}, f"{UNREADABLE_LOG} (ValueError: its samples are not a list but an object)"),
        ("many", f"{UNREADABLE_LOG} (ValueError: its samples are not a list but a string)"),
    ],
    ids=["no samples", "samples an object", "samples a string"],
)
@pytest.mark.parametrize("nested", [False, True], ids=["", "nested past Python's parser"])
def test_a_json_log_without_a_list_of_samples(
    logs: list[Path], tmp_path: Path, samples: Any, expected: str, nested: bool
) -> None:
    # Nested: a key of the log nests past what Python's json module recurses, so the samples
    # are split by DuckDB's parser: the same verdicts.
    def replace(document: dict[str, Any]) -> None:
        if samples is None:
            document.pop("samples")
        else:
            document["samples"] = samples
        if nested:
            document["nest"] = "NESTED"

    log = _json_log(logs[0], tmp_path / "a.json", replace)
    log.write_text(log.read_text().replace('"NESTED"', "[" * 3000 + "]" * 3000))
    got = _frames(log)
    ((line, raw, why),) = got
    assert raw is None and why is not None and expected in why, why
    # No samples is an eval that wrote none, counted after them; a log whose samples are
    # no list is not one Inspect reads at all: quarantined whole.
    assert line == (1 if samples is None else 0)


@pytest.mark.slow
def test_a_json_log_mended_lands_the_bad_sample_in_its_place(
    logs: list[Path], tmp_path: Path
) -> None:
    log = _json_log(logs[0], tmp_path / "inbox" / "a.json", lambda doc: _scores(doc, 1))
    lake = tmp_path / "lake"
    done = pipeline("ingest", log.parent, "--lake", lake)
    assert done.returncode == 0, done.stderr
    count = len(_frames(log))
    assert _rows(lake, "select count(*) from task_runs") == [(count - 1,)]
    ((line, raw, reason),) = _rows(lake, "select line, raw, reason from quarantine")
    assert (line, raw) == (2, None) and reason.startswith("sample ex-1 epoch 1 cannot be read")
    _json_log(logs[0], log)  # as the reason asks: the log mended (here, written again)
    assert pipeline("ingest", log.parent, "--lake", lake).returncode == 0
    assert _rows(lake, "select count(*), min(line), max(line) from task_runs") == [
        (count, 1, count)
    ]
    assert _rows(lake, "select count(*) from quarantine") == [(0,)]
    assert _rows(lake, "select line, outcome from quarantine_resolved") == [(2, "landed")]
    assert pipeline("check", "--lake", lake).returncode == 0


@pytest.mark.slow
def test_a_json_log_lands_the_runs_its_eval_form_lands(logs: list[Path], tmp_path: Path) -> None:
    # Same run_ids, records and scores either way (lines follow each form's own order).
    sql = "select run_id, score, record from task_runs order by run_id"
    landed = []
    for form, path in (("eval", logs[0]), ("json", _json_log(logs[0], tmp_path / "a.json"))):
        lake = tmp_path / form
        assert pipeline("ingest", path, "--lake", lake).returncode == 0
        landed.append(_rows(lake, sql))
    assert len(landed[0]) == 2 * (PROBLEMS + 1)
    assert landed[0] == landed[1]


def test_the_indexes_eval_set_writes_are_skipped_not_quarantined(tmp_path: Path) -> None:
    from pipeline.sources.discover import scan_inputs

    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "eval-set.json").write_text('{\n  "eval_set_id": "B", "tasks": []}')
    (folder / "logs.json").write_text('{\n  "2026_t3_C7.eval": {\n    "version": 2}}')
    (folder / "empty" / "logs.json").parent.mkdir()
    (folder / "empty" / "logs.json").write_text("{}")
    # the same names holding anything else are inputs like any .json
    (folder / "other" / "logs.json").parent.mkdir()
    (folder / "other" / "logs.json").write_text('{"server": {"name": "s"}, "findings": []}')
    found = scan_inputs([folder])
    assert found.files == [(folder / "other" / "logs.json").resolve()]
    assert sorted(found.skipped) == [
        f"{folder / name}: the index Inspect's eval_set keeps of its logs, skipped"
        for name in ("empty/logs.json", "eval-set.json", "logs.json")
    ]


@pytest.mark.slow
def test_rows_are_resolved_when_a_log_read_again_holds_only_copies(
    logs: list[Path], tmp_path: Path
) -> None:
    # Every sample of logs[0] is in the lake already (read from another folder). Three
    # copies of it then go wrong first: one with a sample that cannot be read, one read
    # while its eval ran, one cut short (copied while the eval wrote it). Mended and read
    # again they hold only copies of landed runs; their rows are resolved all the same.
    import zipfile

    with zipfile.ZipFile(logs[0]) as archive:
        names = archive.namelist()
    first = sorted(n for n in names if n.startswith("samples/"))[0]
    lake = tmp_path / "lake"
    shutil.copyfile(logs[0], (tmp_path / "landed").mkdir() or tmp_path / "landed" / "a.eval")
    assert pipeline("ingest", tmp_path / "landed", "--lake", lake).returncode == 0
    broken = _rewritten(
        logs[0], tmp_path / "inbox" / "broken.eval", lambda n: True,
        lambda n, data: b"{not json" if n == first else data,
    )  # fmt: skip
    running = _rewritten(logs[0], tmp_path / "inbox" / "running.eval", lambda n: n != "header.json")
    cut = tmp_path / "inbox" / "cut.eval"
    cut.write_bytes(logs[0].read_bytes()[:2000])
    assert pipeline("ingest", tmp_path / "inbox", "--lake", lake).returncode == 0
    rows = _rows(lake, "select source, line from quarantine order by source")
    assert [(Path(source).name, line > 0) for source, line in rows] == [
        ("broken.eval", True),
        ("cut.eval", False),
        ("running.eval", False),
    ]
    for log in (broken, running, cut):
        shutil.copyfile(logs[0], log)
    assert pipeline("ingest", tmp_path / "inbox", "--lake", lake).returncode == 0
    assert _rows(lake, "select count(*) from quarantine") == [(0,)]
    outcomes = "select outcome, count(*) from quarantine_resolved group by all order by all"
    assert _rows(lake, outcomes) == [("duplicate", 1), ("superseded", 2)]
    assert pipeline("check", "--lake", lake).returncode == 0
    # read once more: nothing is resolved twice
    assert pipeline("ingest", tmp_path / "inbox", "--lake", lake).returncode == 0
    assert _rows(lake, outcomes) == [("duplicate", 1), ("superseded", 2)]


FLAKY_TASK = textwrap.dedent(
    """
    from pathlib import Path

    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, scorer
    from inspect_ai.solver import solver


    @solver
    def flaky(flags):
        async def solve(state, generate):
            if (Path(flags) / str(state.sample_id)).exists():
                raise RuntimeError("sandbox went away")
            return state
        return solve


    @scorer(metrics=[])
    def parts():
        async def score(state, target):
            return Score(value={"defect_matching": 1.0, "pov_quality": 0.5,
                                "summary_quality": 1.0, "target_calls": 0.0})
        return score


    @task
    def flaky_t(flags: str):
        return Task(dataset=[Sample(id=f"ex-{i}", input="go", target="-") for i in range(4)],
                    solver=flaky(flags), scorer=parts())
    """
)


def _flaky_eval(folder: Path, failing: tuple[str, ...] = (), **settings: Any) -> Any:
    """One eval of FLAKY_TASK (its log, in ``folder``/logs unless ``settings`` says), the
    samples ``failing`` names raising; ``folder``/flags names them, so a retry may pass."""
    import inspect_ai

    (folder / "tasks.py").write_text(FLAKY_TASK)
    flags = folder / "flags"
    flags.mkdir(exist_ok=True)
    for sample_id in failing:
        (flags / sample_id).touch()
    chosen = {"log_dir": str(folder / "logs"), "fail_on_error": False, "display": "none"}
    return inspect_ai.eval(
        f"{folder / 'tasks.py'}@flaky_t",
        task_args={"flags": str(flags)},
        model="mockllm/model",
        metadata={"agent": AGENT, "agent_version": "1.0", "env_type": "exploit"},
        **(chosen | settings),
    )[0]


@pytest.mark.slow
def test_a_sample_eval_retry_carries_over_lands_once(tmp_path: Path) -> None:
    # eval_retry writes a new log (a new eval id, so new run_ids) holding the samples that
    # finished the first time, carried over with their uuids, and the ones run again, with
    # new uuids. Read in either order, or together, every attempt lands once.
    inspect_ai = pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    first = _flaky_eval(tmp_path, ("ex-1", "ex-2"))
    (tmp_path / "flags" / "ex-1").unlink()
    settings = {"log_dir": str(tmp_path / "logs"), "fail_on_error": False, "display": "none"}
    retry = inspect_ai.eval_retry(first.location, **settings)[0]
    logs = [read_eval_log(log.location) for log in (first, retry)]
    uuids = [{sample.uuid for sample in log.samples or []} for log in logs]
    carried = uuids[0] & uuids[1]
    assert len(carried) == 2 and logs[0].eval.eval_id != logs[1].eval.eval_id

    def uuids_landed(lake: Path) -> list[str]:
        sql = "select value ->> '$' from run_metadata where key = 'inspect.sample_uuid'"
        return sorted(uuid for (uuid,) in _rows(lake, sql))

    every = sorted(uuids[0] | uuids[1])  # 4 first attempts and 2 run again
    together = tmp_path / "together"
    assert pipeline("run", tmp_path / "logs", "--lake", together).returncode == 0
    assert uuids_landed(together) == every
    for order in ((0, 1), (1, 0)):
        lake = tmp_path / f"lake{order[0]}"
        for index in order:
            inbox = tmp_path / f"inbox{order[0]}{index}"
            inbox.mkdir()
            shutil.copy(Path(logs[index].location), inbox)
            done = pipeline("ingest", inbox, "--lake", lake)
            assert done.returncode == 0, done.stderr
        # the second log's copies of the first's attempts were skipped as duplicates
        counts = summary_counts(done)
        assert (counts["task"], counts["duplicates"]) == (4 - len(carried), len(carried))
        assert uuids_landed(lake) == every
        assert pipeline("check", "--lake", lake).returncode == 0
    # The carried-over runs keep the run_id they first landed with.
    first_ids = _rows(tmp_path / "lake0", "select run_id from task_runs order by 1")
    assert {run_id.split("/")[0] for (run_id,) in first_ids} == {
        f"inspect:{logs[0].eval.eval_id}",
        f"inspect:{logs[1].eval.eval_id}",
    }


@pytest.mark.slow
def test_a_killed_eval_once_retried_is_said_so_and_read_again_only_if_it_changes(
    tmp_path: Path,
) -> None:
    # A log left at "started" is read again every night until its eval ends. An eval killed
    # for good never ends; once its retry (a new eval id, the same task id) has landed, the
    # log is a copy of it: counted as a duplicate, its running row resolved by the retry's
    # first run, and not read again unless it changes (Inspect may yet recover it in place:
    # then its samples are read).
    import time
    import zipfile

    inspect_ai = pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    first = _flaky_eval(tmp_path)
    with zipfile.ZipFile(first.location) as archive:
        samples = sorted(n for n in archive.namelist() if n.startswith("samples/"))
    inbox = tmp_path / "inbox"
    killed = _rewritten(
        Path(first.location),
        inbox / "killed.eval",
        lambda n: n != "header.json" and n not in samples[2:],
    )
    lake = tmp_path / "lake"
    assert pipeline("ingest", inbox, "--lake", lake).returncode == 0
    assert _rows(lake, "select line, reason from quarantine") == [(0, table.RUNNING_REASON)]
    time.sleep(1.1)  # a retry begins after the killed eval did
    retry = inspect_ai.eval_retry(str(killed), log_dir=str(tmp_path / "retry"), display="none")
    retry_id = read_eval_log(retry[0].location, header_only=True).eval.eval_id
    landed = pipeline("ingest", tmp_path / "retry", "--lake", lake)
    assert landed.returncode == 0, landed.stderr
    assert _rows(lake, "select count(*) from task_runs") == [(4,)]
    # The retry's first run graded at least a second after the killed eval began (it
    # says when to the second): the ones it carried over were graded before that.
    from datetime import datetime, timedelta

    began = datetime.fromisoformat(read_eval_log(str(killed), header_only=True).eval.created)
    graded = _rows(lake, "select graded_at, run_id from task_runs order by 1, 2")
    first_run = next(run_id for at, run_id in graded if at >= began + timedelta(seconds=1))
    assert first_run.startswith(f"inspect:{retry_id}/")

    read = pipeline("ingest", inbox, "--lake", lake)
    assert read.returncode == 0, read.stderr
    assert STILL_RUNNING not in read.stdout
    assert f"note: {killed}: {table.retried_note(retry_id)}" in " ".join(read.stdout.split())
    assert summary_counts(read) | {"s": "-"} == {
        **dict.fromkeys(("files", "lines", "duplicates"), 1),
        **dict.fromkeys(("task", "surface", "quarantined", "blank", "seen"), 0),
        "s": "-",
    }
    assert _rows(lake, "select count(*) from quarantine") == [(0,)]
    assert _rows(lake, "select line, run_id, outcome from quarantine_resolved") == [
        (0, first_run, "retried")
    ]
    # Read again, it is the same duplicate, and nothing more is resolved.
    again = pipeline("ingest", inbox, "--lake", lake)
    assert (summary_counts(again)["duplicates"], summary_counts(again)["seen"]) == (1, 0)
    assert _rows(lake, "select count(*) from quarantine_resolved") == [(1,)]
    # The nightly records it as read: the next one does not read it.
    for new in (1, 0):
        done = pipeline("nightly", "--inbox", inbox, "--lake", lake)
        assert done.returncode == 0, done.stderr
        row = next(line for line in done.stdout.splitlines() if line.startswith("│ new files"))
        assert row.replace("│", " ").split()[-1] == str(new), done.stdout

    # Recovered in place: the first log's samples are read, the two it shares with the
    # retry (their uuids) as duplicates.
    shutil.copyfile(first.location, killed)
    done = pipeline("nightly", "--inbox", inbox, "--lake", lake)
    assert done.returncode == 0, done.stderr
    assert _rows(lake, "select count(*) from quarantine") == [(0,)]
    assert _rows(lake, "select count(*) from task_runs") == [(6,)]
    assert pipeline("check", "--lake", lake).returncode == 0


@pytest.mark.slow
def test_a_retry_still_running_is_not_taken_for_a_killed_eval(tmp_path: Path) -> None:
    # A failed eval's retry, running: the lake holds the failed eval's runs of the same
    # task, all graded before the retry began. It is still running, not retried.
    import time
    import zipfile

    inspect_ai = pytest.importorskip("inspect_ai")

    failed = _flaky_eval(tmp_path, ("ex-1",))
    settings = {"fail_on_error": False, "display": "none"}
    lake = tmp_path / "lake"
    assert pipeline("ingest", tmp_path / "logs", "--lake", lake).returncode == 0
    time.sleep(1.1)
    retry = inspect_ai.eval_retry(failed.location, log_dir=str(tmp_path / "retry"), **settings)
    with zipfile.ZipFile(retry[0].location) as archive:
        samples = sorted(n for n in archive.namelist() if n.startswith("samples/"))
    _rewritten(
        Path(retry[0].location),
        tmp_path / "inbox" / "running.eval",
        lambda n: n != "header.json" and n not in samples[3:],
    )
    assert pipeline("ingest", tmp_path / "inbox", "--lake", lake).returncode == 0
    assert _rows(lake, "select reason from quarantine where line = 0") == [(table.RUNNING_REASON,)]


# No ids: Inspect numbers each dataset's samples 1..N. No flag files: no sample fails.
TWO_EXPLOIT_TASKS = FLAKY_TASK + textwrap.dedent(
    """

    @task
    def libpng_t(flags: str):
        return Task(dataset=[Sample(input="go", target="-") for _ in range(3)],
                    solver=flaky(flags), scorer=parts())


    @task
    def zlib_t(flags: str):
        return Task(dataset=[Sample(input="go", target="-") for _ in range(2)],
                    solver=flaky(flags), scorer=parts())
    """
)


@pytest.mark.slow
def test_tasks_of_one_env_type_whose_samples_share_ids_are_noted(tmp_path: Path) -> None:
    inspect_ai = pytest.importorskip("inspect_ai")
    (tmp_path / "tasks.py").write_text(TWO_EXPLOIT_TASKS)
    inspect_ai.eval(
        [f"{tmp_path / 'tasks.py'}@libpng_t", f"{tmp_path / 'tasks.py'}@zlib_t"],
        task_args={"flags": str(tmp_path)},
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        metadata={"agent": AGENT, "agent_version": "1.0", "env_type": "exploit"},
        display="none",
    )
    done = pipeline("run", tmp_path / "logs", "--lake", tmp_path / "lake")
    assert done.returncode == 0, done.stderr
    note = (
        "note: Inspect tasks of env type exploit share sample ids (2 of them, e.g. 1, 2; "
        "tasks libpng_t, zlib_t): compare and the views take their samples as the same "
        "problems; give samples ids unique across the tasks of an env type"
    )
    assert note in " ".join(done.stdout.split())
    assert _rows(tmp_path / "lake", "select count(*) from task_runs") == [(5,)]


def test_a_json_log_is_read_the_same_where_inspect_has_moved_its_context(
    logs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The validation context is inspect-ai's own, not exported, and the extra allows any later
    # inspect-ai: where it is gone, samples are validated without it, and land the same.
    path = _json_log(logs[0], tmp_path / "0.json")
    with_context = _frames(path)
    monkeypatch.setitem(sys.modules, "inspect_ai._util.constants", None)  # import fails
    assert _frames(path) == with_context
    assert len(with_context) > 1 and all(reason is None for _, _, reason in with_context)


@pytest.mark.slow
def test_a_json_log_mended_resolves_the_count_of_a_sample_without_an_id(
    logs: list[Path], tmp_path: Path
) -> None:
    log = _json_log(logs[0], tmp_path / "inbox" / "a.json", lambda doc: doc["samples"][1].pop("id"))
    lake = tmp_path / "lake"
    assert pipeline("ingest", log.parent, "--lake", lake).returncode == 0
    # The sample without an id is the one the header lists and no other sample is: its row
    # says so, in its place, which the mended log's read resolves. (It had also been counted
    # as lacking in an entry after the samples, a place no later read reaches: that row
    # stayed after the sample landed.)
    count = len(_frames(_json_log(logs[0], tmp_path / "good.json")))
    ((line, reason),) = _rows(lake, "select line, reason from quarantine")
    assert line == 2 and "it is one of ex-1 (epoch 1), which no other sample is" in reason
    _json_log(logs[0], log)  # mended: written again
    assert pipeline("ingest", log.parent, "--lake", lake).returncode == 0
    assert _rows(lake, "select count(*) from task_runs") == [(count,)]
    assert _rows(lake, "select line, reason from quarantine") == []


def test_a_json_log_sample_nested_past_what_python_recurses_is_quarantined_alone(
    logs: list[Path], tmp_path: Path
) -> None:
    # Python's json module recurses: one sample nested past its limit had failed the parse of
    # the whole document, and the log was quarantined whole at line 0 with its good samples.
    # DuckDB's parser, which does not recurse, splits the samples, each parsed alone, as a
    # .eval log's are.
    def deep(document: dict[str, Any]) -> None:
        document["samples"][1]["metadata"]["deep"] = "NESTED"

    good = _frames(_json_log(logs[0], tmp_path / "good.json"))
    log = _json_log(logs[0], tmp_path / "bad.json", deep)
    nested = '{"a":' * 2000 + "1" + "}" * 2000
    log.write_text(log.read_text().replace('"NESTED"', nested))
    got = _frames(log)
    assert [line for line, _, _ in got] == [line for line, _, _ in good]
    assert got[0] == good[0] and got[2:] == good[2:]
    assert got[1][1] is None and "RecursionError" in (got[1][2] or "")


def _open_lacking(lake: Path) -> list[tuple[str, str]]:
    """The quarantine view's open entries counting samples a log lacks (file name, reason)."""
    rows = _rows(lake, "select source, reason from quarantine order by 1")
    return [(Path(source).name, reason) for source, reason in rows if "lists are not in" in reason]


@pytest.mark.slow
def test_a_stopped_logs_lacking_samples_are_resolved_once_a_retry_lands_them(
    tmp_path: Path,
) -> None:
    # An eval that stops at an error (fail_on_error, one sample at a time) lands what it
    # finished; its entry counting the samples it never ran stays open until a retry has
    # landed them. A retry that stops too leaves it (and its own) open; a retry of that one
    # that lands every sample resolves both, naming its first run; in any order of reading.
    inspect_ai = pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    stopping = {"fail_on_error": True, "max_samples": 1, "display": "none"}
    stopped = _flaky_eval(tmp_path, ("ex-0",), **stopping)
    again = inspect_ai.eval_retry(stopped.location, log_dir=str(tmp_path / "logs"), **stopping)[0]
    (tmp_path / "flags" / "ex-0").unlink()
    done = inspect_ai.eval_retry(again.location, log_dir=str(tmp_path / "logs"), **stopping)[0]
    logs = [read_eval_log(log.location) for log in (stopped, again, done)]
    assert [log.status for log in logs] == ["error", "error", "success"]
    held = [{(s.id, s.epoch) for s in log.samples or []} for log in logs]
    assert len(held[0]) < 4 and len(held[1]) < 4 and len(held[2]) == 4

    lake = tmp_path / "lake"
    names = [Path(log.location).name for log in logs]
    for index in (0, 1):
        inbox = tmp_path / f"inbox{index}"
        inbox.mkdir()
        shutil.copy(logs[index].location, inbox)
        assert pipeline("ingest", inbox, "--lake", lake).returncode == 0
    assert [name for name, _ in _open_lacking(lake)] == sorted(names[:2])
    inbox = tmp_path / "inbox2"
    inbox.mkdir()
    shutil.copy(logs[2].location, inbox)
    read = pipeline("ingest", inbox, "--lake", lake)
    assert read.returncode == 0, read.stderr
    assert _open_lacking(lake) == []
    # Resolved by the last retry's first run graded after each log's last landed run.
    resolved = _rows(
        lake,
        "select source, run_id, outcome from quarantine_resolved where outcome = 'retried'",
    )
    assert sorted(Path(source).name for source, _, _ in resolved) == sorted(names[:2])
    assert {run_id.split("/")[0] for _, run_id, _ in resolved} == {
        f"inspect:{logs[2].eval.eval_id}"
    }
    note = " ".join(read.stdout.split())
    assert f"landed with eval {logs[2].eval.eval_id}, a retry of it" in note
    assert pipeline("check", "--lake", lake).returncode == 0

    # Read together, or the retry first: the same entries end resolved.
    for order in ((0, 1, 2), (2, 1, 0)):
        lake = tmp_path / f"lake{''.join(map(str, order))}"
        for index in order:
            inbox = tmp_path / f"in{index}{order[0]}"
            inbox.mkdir()
            shutil.copy(logs[index].location, inbox)
            assert pipeline("ingest", inbox, "--lake", lake).returncode == 0
        assert _open_lacking(lake) == []
    assert pipeline("ingest", tmp_path / "logs", "--lake", tmp_path / "together").returncode == 0
    assert _open_lacking(tmp_path / "together") == []
