"""Generators of valid task grades and mcp-xray reports, and of the ways they break.

Two speeds of the same thing:

- plain functions over a seeded ``random.Random`` (``task_record``,
  ``surface_report``, ``corpus``) make ten thousand lines in well under a
  second, for the one big seeded run;
- hypothesis strategies (``task_records``, ``surface_reports``, ``names``,
  ``mutated_files``) for the property tests, which shrink a failure to a
  small example.

Records are built by ``tools.simulate.records`` (the sample generator's builders), so
a contract field is added in one place; this module only chooses the values.

Every generated line carries what must become of it (``Expect``), so a test
checks more than "nothing was lost": a valid record must land, a broken one
must be quarantined, and a few mutations whose fate the contract leaves open
(``EITHER``) must only be accounted for.
"""

from __future__ import annotations

import copy
import gzip
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from hypothesis import strategies as st

from tools.simulate import ENV_TYPES, ENV_WEIGHTS, records

# The default rubric's components per env type, as the sample generator reads them.
COMPONENTS: dict[str, tuple[str, ...]] = {env: tuple(ENV_WEIGHTS[env]) for env in ENV_TYPES}
KNOWN_KINDS = (
    "token_cost",
    "schema_smell",
    "merge_candidate",
    "duplicate",
    "selection_error",
    "distraction",
    "hidden_injector",
    "resource_candidate",
    "jit_candidate",
    "result_size",
)
SMELLS = ("missing_description", "tiny_description", "deep_nesting", "enum_bloat", "wide_schema")
PROBES = ("static_hygiene", "consolidate", "noise")
# Names that try to become SQL, paths or terminal escapes; all NUL-free.
HOSTILE_NAMES = (
    "x'); drop view task_runs; --",
    'quote"double',
    "semi;colon",
    "../../etc/passwd",
    "a/b\\c",
    "..",
    "tab\tnew\nline\rcr",
    "\x1b[31mred\x1b[0m",
    "\x01\x02\x7f",
    "名前-ü-🙂",
    "{{lake}}",
    "*?[]{}",
    "$1 :name ?",
    " leading and trailing ",
    "%s%n%x",
    # Rich markup: a closing tag had failed the run summary, a link tag made a link.
    "[/bold]oops",
    "[link=https://evil.example]click[/link]",
    # Bidi override: shown reversed unless escaped.
    "exe\u202etxt",
)


class Expect(Enum):
    LAND = "land"
    QUARANTINE = "quarantine"
    DUPLICATE = "duplicate"
    BLANK = "blank"
    EITHER = "either"  # the contract leaves the outcome open; only accounting is checked


@dataclass(frozen=True)
class Line:
    """One generated input line (without its newline) and what must become of it."""

    data: bytes
    expect: Expect
    kind: str  # "task" | "surface" | "other"
    run_id: str | None
    mutation: str


# --------------------------------------------------------------------------- fast generators


def _name(rng: random.Random, prefix: str) -> str:
    if rng.random() < 0.1:
        return rng.choice(HOSTILE_NAMES)
    return f"{prefix}-{rng.randrange(40)}"


def _timestamp(rng: random.Random) -> str:
    offset = rng.choice(("Z", "+00:00", "+01:00", "-07:30", "+14:00"))
    return (
        f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        f"{rng.choice(('', '.5', '.123456'))}{offset}"
    )


def _task_metadata(rng: random.Random, env: str) -> dict[str, Any]:
    if env == "audit":
        return {
            "recall": round(rng.random(), 3),
            "precision": round(rng.random(), 3),
            "found": [f"D-{k}" for k in range(rng.randrange(3))],
            "missed": [],
            "submissions": rng.randrange(10),
            "duplicates": 0,
            "non_crashers": rng.randrange(3),
        }
    return {"note": {"why": _name(rng, "note")}, "list": [1, {"x": None}]}


def _maybe(rng: random.Random, rate: float, value: Callable[[], Any]) -> Any:
    """``value()`` with probability ``rate``, else None (the builder leaves the field out)."""
    return value() if rng.random() < rate else None


def task_record(rng: random.Random, run_id: str) -> dict[str, Any]:
    """A task grade that CONTRACT section 2 accepts, built by the generator's builder."""
    env = rng.choice(ENV_TYPES)
    names = COMPONENTS[env]
    subscores = {n: rng.choice((0.0, 1.0, round(rng.random(), 6))) for n in names}
    weights = {n: round(rng.random(), 4) for n in names}
    metadata = _task_metadata(rng, env)
    if env == "audit":
        subscores = {"audit": metadata["recall"] * metadata["precision"]}
    if env == "patch" and rng.random() < 0.5:
        metadata["minimization"] = {
            "final_size": rng.randint(1, 500),
            "minimal_size": rng.randint(1, 100),
        }
    penalties = _maybe(rng, 0.3, lambda: {"timeout": round(rng.random() / 4, 3)})
    failed = rng.random() < 0.05
    logs = ["sandbox died", _name(rng, "log")] if failed else None
    unbounded = _maybe(rng, 0.05, lambda: True)
    required = {
        "agent": _name(rng, "agent"),
        "agent_version": rng.choice(("1.0.0", "2.1.3", "9f3c2ab", "2026-11-30")),
        "problem_id": _name(rng, "problem"),
        "graded_at": _timestamp(rng),
    }
    optional = {
        "defect_id": f"D-{rng.randrange(100)}" if env != "audit" else None,
        "cwe": _maybe(rng, 0.7, lambda: f"CWE-{rng.randrange(1000)}"),
        "project": _maybe(rng, 0.5, lambda: _name(rng, "project")),
        "trial": _maybe(rng, 0.6, lambda: rng.randrange(5)),
        **{
            key: _maybe(rng, 0.5, lambda: round(rng.random() * 100, 3))
            for key in ("cost_usd", "tokens", "wall_seconds")
        },
    }
    return records.task_record(
        run_id=run_id,
        env_type=env,
        subscores=subscores,
        weights=weights,
        metadata=metadata,
        penalties=penalties,
        env_internal_failure=True if failed else None,
        env_internal_failure_logs=logs,
        allow_unbounded=unbounded,
        **required,
        **optional,
    )


def _finding(rng: random.Random, kind: str, tools: list[str]) -> dict[str, Any]:
    measurement: dict[str, Any]
    target: str | list[str] = rng.choice(tools)
    if kind == "token_cost":
        share = round(rng.random(), 3)
        measurement = {"scope": "tool", "tokens": rng.randint(10, 900), "share": share}
    elif kind == "schema_smell":
        measurement = {"smell": rng.choice(SMELLS)}
    elif kind == "merge_candidate":
        target = rng.sample(tools, min(2, len(tools)))
        measurement = {
            "tokens_saved_est": rng.randint(0, 2000),
            "wide_union": rng.random() < 0.5,
            "mixes_read_write": rng.random() < 0.5,
        }
    elif kind == "selection_error":
        mode = rng.choice(("labeled", "confusability_proxy"))
        measurement = {"pass_rate": round(rng.random(), 3), "mode": mode}
    elif kind == "distraction":
        measurement = {"fire_rate": round(rng.random(), 3)}
    elif kind == "hidden_injector":
        measurement = {"tokens_est": rng.randint(0, 3000), "kind": "instructions"}
    elif kind == "jit_candidate":
        measurement = {"recommend_jit": rng.random() < 0.5}
    else:
        measurement = {"bytes": rng.randint(0, 10**6)}
    return records.finding(
        probe=rng.choice(PROBES),
        kind=kind,
        target=target,
        measurement=measurement,
        severity=round(rng.random(), 3),
        confidence=round(rng.random(), 3),
        detail={"text": _name(rng, "detail")},
    )


def surface_report(rng: random.Random, run_id: str | None) -> dict[str, Any]:
    """An mcp-xray report shaped like ``tests/fixtures/mcp-xray/*.json``."""
    tool_count = rng.randint(1, 6)
    tools = [f"tool_{k}" for k in range(tool_count)]
    tokens = rng.randint(100, 5000)
    surface_cost = records.finding(
        probe="static_hygiene",
        kind="token_cost",
        target=tools,
        measurement={
            "scope": "surface",
            "tokens": tokens,
            "tool_count": tool_count,
            "tokens_per_tool_avg": tokens / tool_count,
        },
        confidence=0.7,
        detail={"full": tokens + 3},
    )
    findings = [surface_cost]
    findings += [_finding(rng, rng.choice(KNOWN_KINDS), tools) for _ in range(rng.randint(0, 5))]
    return records.surface_report(
        generated_at=_timestamp(rng),
        server={
            "name": _name(rng, "server"),
            "version": f"0.{rng.randrange(9)}.{rng.randrange(9)}",
            "fingerprint": f"{rng.getrandbits(64):016x}",
            "tool_count": tool_count,
        },
        grade={"overall": round(rng.random() * 100, 1), "letter": "B", "subscores": {}},
        headline={"phased": False, "worst_phase": None, "phase_tokens": None},
        coverage={"ran": rng.sample(PROBES, rng.randint(1, 3))},
        findings=findings,
        run_id=run_id,
    )


# ------------------------------------------------------------------------------- mutations

Mutation = Callable[[random.Random, dict[str, Any]], tuple[bytes, Expect]]


def _dumps(record: Any) -> bytes:
    return json.dumps(record, ensure_ascii=False).encode()


def _set(path: tuple[str, ...], value: Any, expect: Expect) -> Mutation:
    def mutate(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
        target = record
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        return _dumps(record), expect

    return mutate


def _drop(path: tuple[str, ...], expect: Expect) -> Mutation:
    def mutate(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
        target = record
        for key in path[:-1]:
            target = target[key]
        target.pop(path[-1], None)
        return _dumps(record), expect

    return mutate


def _first_component(record: dict[str, Any]) -> str:
    return next(iter(record["grade"]["subscores"]))


def _subscore_literal(literal: str) -> Mutation:
    """A non-finite literal written into the text, where json.dumps cannot put one."""

    def mutate(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
        record["grade"]["subscores"][_first_component(record)] = "__HOLE__"
        return _dumps(record).replace(b'"__HOLE__"', literal.encode()), Expect.QUARANTINE

    return mutate


def _subscore(value: float) -> Mutation:
    def mutate(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
        record["grade"]["subscores"][_first_component(record)] = value
        return _dumps(record), Expect.QUARANTINE

    return mutate


def _negative_weight(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    record["grade"]["weights"][_first_component(record)] = -0.5
    return _dumps(record), Expect.QUARANTINE


def _mismatched_keys(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    record["grade"]["weights"]["not_a_subscore"] = 0.1
    return _dumps(record), Expect.QUARANTINE


def _nested(depth: int, expect: Expect) -> Mutation:
    def mutate(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
        # Built as text: json.dumps itself would recurse once per level.
        blob = '{"a":' * (depth - 1) + "[]" + "}" * (depth - 1)
        # The record is depth 3 where the blob sits (record > grade > metadata).
        record["grade"]["metadata"]["deep"] = "__HOLE__"
        return _dumps(record).replace(b'"__HOLE__"', blob.encode()), expect

    return mutate


def _long_string(chars: int, expect: Expect) -> Mutation:
    def mutate(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
        record["grade"]["metadata"]["log"] = "x" * chars
        return _dumps(record), expect

    return mutate


def _invalid_utf8(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    record["agent"] = "__HOLE__"
    bad = rng.choice((b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28"))
    return _dumps(record).replace(b"__HOLE__", b"bad" + bad), Expect.QUARANTINE


def _truncated(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    text = _dumps(record)
    return text[: rng.randint(1, len(text) - 1)], Expect.QUARANTINE


def _not_an_object(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    return rng.choice((b"[1, 2]", b'"text"', b"42", b"null", b"true")), Expect.QUARANTINE


def _garbage(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    return rng.choice((b"not json", b"{'single': 'quotes'}", b"{,}", b"}{")), Expect.QUARANTINE


def _blank(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    return rng.choice((b"", b"   ", b"\t")), Expect.BLANK


def _extra_fields(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    record["grader_build"] = {"id": rng.randrange(10**6), "tags": ["a", None, 1.5]}
    record["grade"]["novel"] = {"x": True}
    return _dumps(record), Expect.LAND


def _control_characters(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    record["problem_id"] = "ctl\x01\x1f\x7f\u2028\ufeff"
    return _dumps(record), Expect.LAND


def _bom_mid_file(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    return b"\xef\xbb\xbf" + _dumps(record), Expect.EITHER


def _duplicate_key(rng: random.Random, record: dict[str, Any]) -> tuple[bytes, Expect]:
    text = _dumps(record)
    return b'{"agent": "shadowed", ' + text[1:], Expect.EITHER


# name -> mutation, for task records. Fates follow CONTRACT sections 2 and 8.
TASK_MUTATIONS: dict[str, Mutation] = {
    **{
        f"drop_{field}": _drop((field,), Expect.QUARANTINE)
        for field in ("run_id", "agent", "agent_version", "problem_id", "env_type")
    },
    "drop_graded_at": _drop(("graded_at",), Expect.QUARANTINE),
    "drop_grade": _drop(("grade",), Expect.QUARANTINE),
    "drop_subscores": _drop(("grade", "subscores"), Expect.QUARANTINE),
    "drop_cwe": _drop(("cwe",), Expect.LAND),
    "drop_metadata": _drop(("grade", "metadata"), Expect.LAND),
    "agent_is_number": _set(("agent",), 5, Expect.QUARANTINE),
    "agent_is_null": _set(("agent",), None, Expect.QUARANTINE),
    "trial_is_text": _set(("trial",), "zero", Expect.QUARANTINE),
    "trial_is_float": _set(("trial",), 1.5, Expect.QUARANTINE),
    "trial_negative": _set(("trial",), -1, Expect.QUARANTINE),
    "cost_negative": _set(("cost_usd",), -0.01, Expect.QUARANTINE),
    "cost_is_text": _set(("cost_usd",), "cheap", Expect.QUARANTINE),
    "cost_huge": _set(("cost_usd",), 1.7e308, Expect.LAND),
    "tokens_huge_int": _set(("tokens",), 10**30, Expect.EITHER),
    "trial_huge_int": _set(("trial",), 2**70, Expect.EITHER),
    "grade_is_list": _set(("grade",), [1, 2], Expect.QUARANTINE),
    "graded_at_no_offset": _set(("graded_at",), "2026-11-30T12:00:00", Expect.QUARANTINE),
    "graded_at_garbage": _set(("graded_at",), "yesterday", Expect.QUARANTINE),
    "env_type_new": _set(("env_type",), "fuzz", Expect.QUARANTINE),
    "run_id_empty": _set(("run_id",), "", Expect.QUARANTINE),
    "run_id_too_long": _set(("run_id",), "r" * 257, Expect.QUARANTINE),
    "subscore_nan": _subscore_literal("NaN"),
    "subscore_infinity": _subscore_literal("Infinity"),
    "subscore_minus_infinity": _subscore_literal("-Infinity"),
    "subscore_overflow": _subscore_literal("1e999"),
    "subscore_above_one": _subscore(1.5),
    "subscore_negative": _subscore(-0.1),
    "weight_negative": _negative_weight,
    "keys_mismatched": _mismatched_keys,
    "nested_ok": _nested(40, Expect.LAND),
    "nested_too_deep": _nested(200, Expect.QUARANTINE),
    "long_string": _long_string(200_000, Expect.LAND),
    "invalid_utf8": _invalid_utf8,
    "truncated": _truncated,
    "not_an_object": _not_an_object,
    "garbage": _garbage,
    "blank": _blank,
    "extra_fields": _extra_fields,
    "control_characters": _control_characters,
    "bom_mid_file": _bom_mid_file,
    "duplicate_key": _duplicate_key,
}


def _finding_set(key: str, value: Any, expect: Expect) -> Mutation:
    def mutate(rng: random.Random, report: dict[str, Any]) -> tuple[bytes, Expect]:
        report["findings"][0]["measurement"][key] = value
        return _dumps(report), expect

    return mutate


def _null_server_key(rng: random.Random, report: dict[str, Any]) -> tuple[bytes, Expect]:
    # CONTRACT 3: the server key is server.name, else server.fingerprint; neither: quarantined
    report["server"].update(name=None, fingerprint=None)
    return _dumps(report), Expect.QUARANTINE


SURFACE_MUTATIONS: dict[str, Mutation] = {
    # a bare tool dump has no server name: the fingerprint is the key
    "drop_server_name": _drop(("server", "name"), Expect.LAND),
    "drop_server_version": _drop(("server", "version"), Expect.LAND),
    "null_server_key": _null_server_key,
    "server_is_text": _set(("server",), "srv", Expect.QUARANTINE),
    "findings_is_object": _set(("findings",), {"a": 1}, Expect.QUARANTINE),
    "tool_count_negative": _set(("server", "tool_count"), -3, Expect.QUARANTINE),
    "tokens_negative": _finding_set("tokens", -5, Expect.QUARANTINE),
    "tokens_text": _finding_set("tokens", "many", Expect.QUARANTINE),
    "generated_at_garbage": _set(("generated_at",), "soon", Expect.EITHER),
    "new_top_field": _set(("carbon",), {"grams": 3}, Expect.LAND),
    "truncated": _truncated,
    "invalid_utf8": _invalid_utf8,
    "nested_too_deep": _set(("detail",), "__HOLE__", Expect.QUARANTINE),
}


def new_kind(rng: random.Random, report: dict[str, Any]) -> tuple[bytes, Expect]:
    report["findings"].append(
        {"probe": "future", "kind": "quantum_smell", "target": "tool_0", "measurement": {}}
    )
    return _dumps(report), Expect.LAND


def _deep_detail(rng: random.Random, report: dict[str, Any]) -> tuple[bytes, Expect]:
    report["detail"] = "__HOLE__"
    blob = "[" * 100 + "]" * 100
    return _dumps(report).replace(b'"__HOLE__"', blob.encode()), Expect.QUARANTINE


SURFACE_MUTATIONS["new_kind"] = new_kind
SURFACE_MUTATIONS["nested_too_deep"] = _deep_detail


# ---------------------------------------------------------------------------------- corpus


def corpus(n: int, seed: int, mutation_rate: float = 0.4, surface_rate: float = 0.15) -> list[Line]:
    """``n`` lines: valid task grades and reports, mutations of them, and exact duplicates."""
    rng = random.Random(seed)
    lines: list[Line] = []
    landed: list[Line] = []
    task_names = sorted(TASK_MUTATIONS)
    surface_names = sorted(SURFACE_MUTATIONS)
    for index in range(n):
        run_id = f"fz{seed}-{index}"
        if landed and rng.random() < 0.03:
            again = rng.choice(landed)
            lines.append(Line(again.data, Expect.DUPLICATE, again.kind, again.run_id, "duplicate"))
            continue
        is_surface = rng.random() < surface_rate
        record = surface_report(rng, run_id) if is_surface else task_record(rng, run_id)
        kind = "surface" if is_surface else "task"
        if rng.random() < mutation_rate:
            name = rng.choice(surface_names if is_surface else task_names)
            mutate = (SURFACE_MUTATIONS if is_surface else TASK_MUTATIONS)[name]
            data, expect = mutate(rng, record)
            lines.append(Line(data, expect, kind, run_id, name))
        else:
            line = Line(_dumps(record), Expect.LAND, kind, run_id, "none")
            lines.append(line)
            landed.append(line)
    return lines


def jsonl_bytes(lines: list[Line], *, crlf: bool = False, bom: bool = False) -> bytes:
    ending = b"\r\n" if crlf else b"\n"
    body = b"".join(line.data + ending for line in lines)
    return (b"\xef\xbb\xbf" if bom else b"") + body


def gzip_cut(data: bytes, keep: float) -> bytes:
    """A gzip of ``data`` that ends early, keeping ``keep`` of its compressed bytes."""
    blob = gzip.compress(data, mtime=0)
    return blob[: max(1, int(len(blob) * keep))]


# ------------------------------------------------------------------------ hypothesis side

# NUL-free text of any plane, lone surrogates excluded (JSON cannot carry them as UTF-8).
name_text = st.text(
    alphabet=st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
    min_size=1,
    max_size=40,
)
names = st.one_of(st.sampled_from(HOSTILE_NAMES), name_text)


@st.composite
def task_records(draw: st.DrawFn) -> dict[str, Any]:
    """A valid task grade, its names drawn from hostile text."""
    rng = draw(st.randoms(use_true_random=False))
    record = task_record(rng, draw(st.uuids()).hex)
    record["agent"] = draw(names)
    record["agent_version"] = draw(names)
    record["problem_id"] = draw(names)
    return record


@st.composite
def surface_reports(draw: st.DrawFn) -> dict[str, Any]:
    rng = draw(st.randoms(use_true_random=False))
    report = surface_report(rng, draw(st.uuids()).hex)
    report["server"]["name"] = draw(names)
    report["server"]["version"] = draw(names)
    return report


@dataclass(frozen=True)
class GeneratedFile:
    name: str  # file name, its suffix decides how it is read
    data: bytes
    lines: list[Line]
    gzip_cut: bool


@st.composite
def mutated_files(draw: st.DrawFn) -> GeneratedFile:
    """A .jsonl or .jsonl.gz file of mutated records, in any line ending, maybe cut short."""
    rng = draw(st.randoms(use_true_random=False))
    count = draw(st.integers(min_value=0, max_value=25))
    lines = corpus(count, seed=rng.randrange(2**32), mutation_rate=0.7)
    # Duplicates point at lines of this file only; a mutation may reuse a run_id
    # across files, which the test treats as "either".
    crlf = draw(st.booleans())
    bom = draw(st.booleans())
    data = jsonl_bytes(lines, crlf=crlf, bom=bom)
    if draw(st.booleans()) and data and not draw(st.booleans()):
        data = data.rstrip(b"\r\n")  # no newline after the last line
    compressed = draw(st.sampled_from(("plain", "gzip", "gzip_cut")))
    if compressed == "plain":
        return GeneratedFile("batch.jsonl", data, lines, False)
    if compressed == "gzip":
        return GeneratedFile("batch.jsonl.gz", gzip.compress(data, mtime=0), lines, False)
    keep = draw(st.floats(min_value=0.05, max_value=0.95))
    return GeneratedFile("batch.jsonl.gz", gzip_cut(data, keep), lines, True)


def mutate_copy(record: dict[str, Any], mutation: Mutation, seed: int) -> tuple[bytes, Expect]:
    return mutation(random.Random(seed), copy.deepcopy(record))
