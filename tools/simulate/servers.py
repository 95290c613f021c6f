"""The sample's MCP servers: their tools, phases and the findings each version shows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ALL_TOOLS = "*"


@dataclass(frozen=True)
class FindingSpec:
    """One probe finding; a tuple value in ``measurement`` gives one value per version."""

    probe: str
    kind: str
    target: str | tuple[str, ...]
    measurement: Mapping[str, Any]
    versions: tuple[int, ...] | None = None
    confidence: float = 0.8
    detail: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ServerSpec:
    name: str
    versions: tuple[str, ...]
    transport: str
    tools: tuple[str, ...]
    tokens_per_tool: tuple[int, int]
    growth: float
    findings: tuple[FindingSpec, ...]
    # Whether the noise probe (selection, distraction) ran on it.
    noise: bool = False
    # phase -> its tools; None for a server that loads every tool at once (see _phased).
    phases: Mapping[str, tuple[str, ...]] | None = None
    not_run: Mapping[int, tuple[str, ...]] | None = None
    run_id: Mapping[int, str] | None = None


def _phased(phases: Mapping[str, tuple[str, ...]], **spec: Any) -> ServerSpec:
    """A server that loads its tools phase by phase: its tools are its phases', in order."""
    tools = tuple(tool for phase_tools in phases.values() for tool in phase_tools)
    return ServerSpec(transport="phases", tools=tools, phases=phases, **spec)


def _smell(
    target: str, smell: str, versions: tuple[int, ...] | None = None, **extra: Any
) -> FindingSpec:
    return FindingSpec(
        "static_hygiene", "schema_smell", target, {"smell": smell, **extra}, versions, 0.8
    )


def _merge(
    targets: tuple[str, ...],
    saved: int | tuple[int, ...],
    *,
    wide: bool = False,
    mixes: bool = False,
    versions: tuple[int, ...] | None = None,
) -> FindingSpec:
    measurement = {
        "lens": "capability",
        "action": "merge",
        "tokens_saved_est": saved,
        "union_width": len(targets),
        "wide_union": wide,
        "mixes_read_write": mixes,
    }
    detail = {"proposal": f"manage({'/'.join(targets)})", "mixes_read_write": mixes}
    return FindingSpec(
        "consolidate", "merge_candidate", targets, measurement, versions, 0.8, detail
    )


def _labeled(query: str, expected: str, pass_rate: tuple[float, ...]) -> FindingSpec:
    measurement = {
        "mode": "labeled",
        "pass_rate": pass_rate,
        "samples": 5,
        "errors": 0,
        "expected": [expected],
    }
    return FindingSpec(
        "noise", "selection_error", (expected,), measurement, None, 0.85, {"query": query}
    )


def _proxy(
    tool: str, pass_rate: tuple[float, ...], versions: tuple[int, ...] | None = None
) -> FindingSpec:
    measurement = {"mode": "confusability_proxy", "pass_rate": pass_rate, "samples": 5, "errors": 0}
    return FindingSpec("noise", "selection_error", tool, measurement, versions, 0.7)


def _distraction(task: str, fired: tuple[str, ...], fire_rate: tuple[float, ...]) -> FindingSpec:
    measurement = {"fire_rate": fire_rate, "samples": 5, "errors": 0}
    return FindingSpec(
        "noise", "distraction", fired, measurement, None, 0.8, {"off_domain_task": task}
    )


def _injector(
    kind: str, tokens: int | tuple[int, ...], versions: tuple[int, ...] | None = None
) -> FindingSpec:
    return FindingSpec(
        "static_hygiene",
        "hidden_injector",
        f"server.{kind}",
        {"kind": kind, "tokens_est": tokens},
        versions,
        0.6,
    )


def _duplicate(tools: tuple[str, ...], versions: tuple[int, ...]) -> FindingSpec:
    return FindingSpec("mcp_checkup", "duplicate", tools, {"source": "mcp-checkup"}, versions, 0.6)


def _result_size(tool: str, **measured: Any) -> FindingSpec:
    return FindingSpec("result_size", "result_size", tool, {"tool": tool, **measured}, None, 0.9)


def _jit(recommend: bool, **extra: Any) -> FindingSpec:
    measurement = {
        "tool_count": ALL_TOOLS,
        "looks_dynamic": recommend,
        "recommend_jit": recommend,
        "threshold": 15,
    }
    return FindingSpec(
        "consolidate", "jit_candidate", ALL_TOOLS, {**measurement, **extra}, None, 0.5
    )


def _resource(tool: str, versions: tuple[int, ...] | None = None) -> FindingSpec:
    measurement = {"lens": "behavioral", "action": "resource", "verb": tool.split("_")[0]}
    return FindingSpec("consolidate", "resource_candidate", tool, measurement, versions, 0.55)


PAY_TOOLS = tuple(
    f"{resource}_{verb}"
    for resource, verbs in (
        ("charges", ("create", "get", "list")),
        ("refunds", ("create", "get")),
        ("customers", ("create", "get", "update", "delete")),
        ("invoices", ("create", "get", "list")),
        ("payouts", ("get", "list")),
        ("disputes", ("list", "update")),
        ("balance", ("get",)),
        ("webhooks", ("list",)),
    )
    for verb in verbs
)
REPO_PHASES = {
    "issues": ("create_issue", "get_issue", "list_issues", "update_issue", "search_issues"),
    "pulls": (
        "create_pull_request",
        "get_pull",
        "list_pulls",
        "merge_pull",
        "update_pull",
        "review_pull",
    ),
    "repos": (
        "create_file",
        "delete_file",
        "get_file",
        "list_branches",
        "list_tags",
        "search_code",
        "update_repo",
        "fork_repo",
    ),
}
SHELL_PHASES = {
    "files": ("read_file", "write_file", "list_dir", "move_file"),
    "process": ("run_command", "kill_process", "list_processes"),
}

SAMPLE_SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        name="weather-kit",
        versions=("1.0.0", "1.1.0", "1.2.0"),
        transport="tools-json",
        tools=(
            "get_forecast",
            "get_current",
            "get_alerts",
            "search_location",
            "get_history",
            "get_air_quality",
        ),
        tokens_per_tool=(110, 240),
        growth=1.15,
        findings=(
            _smell("get_alerts", "tiny_description", (0,), words=1),
            _smell("get_history", "missing_description", (0, 1), words=0),
            _smell("search_location", "short_description", words=4),
            _merge(("get_forecast", "get_current"), (140, 150, 160)),
            _resource("get_air_quality", (1, 2)),
            _jit(False),
        ),
    ),
    _phased(
        REPO_PHASES,
        name="repo-forge",
        versions=("2.0.0", "2.1.0"),
        tokens_per_tool=(180, 520),
        growth=1.1,
        findings=(
            _smell("list_issues", "enum_bloat", enum_sizes=[40], max=40),
            _smell("create_pull_request", "deep_nesting", depth=5),
            _smell("update_repo", "wide_schema", (1,), property_count=24),
            _smell("search_code", "vague_description", terms=["various"]),
            _merge(("get_issue", "get_pull"), 260, wide=True),
            _merge(("create_file", "delete_file", "get_file"), (420, 380), mixes=True),
            _merge(
                ("update_issue", "update_pull", "update_repo"),
                700,
                wide=True,
                mixes=True,
                versions=(0,),
            ),
            _resource("list_branches"),
            _resource("list_tags"),
            _jit(False, phase_count=3, progressive=True),
        ),
    ),
    ServerSpec(
        name="notes-vault",
        versions=("0.3.0", "0.4.0"),
        transport="stdio",
        tools=(
            "create_note",
            "get_note",
            "update_note",
            "delete_note",
            "search_notes",
            "list_tags",
            "export_notes",
        ),
        noise=True,
        tokens_per_tool=(150, 330),
        growth=0.95,
        findings=(
            _smell("list_tags", "short_description", words=3),
            _labeled("find my notes about the offsite", "search_notes", (0.6, 0.8)),
            _labeled("save this as a new note", "create_note", (1.0, 1.0)),
            _labeled("fix the typo in yesterday's note", "update_note", (0.4, 0.8)),
            _labeled("download everything as markdown", "export_notes", (0.8, 1.0)),
            _distraction("what is the capital of Peru?", ("search_notes",), (0.4, 0.2)),
            _injector("instructions", (900, 400)),
            _injector("prompts", 120),
            _injector("resources", 300),
            _duplicate(("get_note", "export_notes"), (0,)),
            _result_size("get_note", chars=5400, bytes=5400),
            _result_size("export_notes", error="timeout"),
            _jit(False),
        ),
    ),
    ServerSpec(
        name="pay-gateway",
        versions=("1.0.0", "2.0.0"),
        transport="http",
        tools=PAY_TOOLS,
        noise=True,
        tokens_per_tool=(260, 720),
        growth=1.3,
        findings=(
            _smell("charges_list", "vague_description", terms=["various", "stuff"]),
            _smell("webhooks_list", "unbounded_array", field="events"),
            _smell("customers_update", "wide_schema", property_count=31),
            _proxy("charges_get", (0.6, 0.4)),
            _proxy("refunds_get", (0.8, 0.6)),
            _proxy("customers_get", (0.8, 0.8), (1,)),
            _distraction("write me a haiku about autumn", ("balance_get",), (0.2, 0.6)),
            _injector("instructions", (1500, 2400)),
            _merge(("customers_create", "customers_update", "customers_delete"), 520, mixes=True),
            _merge(
                ("charges_list", "invoices_list", "payouts_list", "disputes_list"), 900, wide=True
            ),
            _jit(True),
            FindingSpec(
                "auth_audit", "auth_scope", "customers_delete", {"scope": "write:all"}, (1,), 0.5
            ),
        ),
    ),
    _phased(
        SHELL_PHASES,
        name="shell-tools",
        versions=("0.9.0", "1.0.0", "1.1.0"),
        noise=True,
        tokens_per_tool=(160, 420),
        growth=0.9,
        findings=(
            _smell("kill_process", "missing_description", (0,), words=0),
            _smell("run_command", "deep_nesting", depth=4),
            _labeled("show me what is in /tmp", "list_dir", (0.6, 0.8, 1.0)),
            _labeled("stop the runaway job", "kill_process", (0.4, 0.6, 0.8)),
            _distraction("translate 'hello' into French", ("run_command",), (0.6, 0.4, 0.2)),
            _injector("resources", 450),
            _duplicate(("list_dir", "list_processes"), (1, 2)),
            _merge(("read_file", "write_file"), 210, mixes=True),
            _jit(False),
        ),
        # The first version was graded without the consolidate probe.
        not_run={0: ("consolidate",)},
    ),
)
EXTRA_SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        name="calc-lite",
        versions=("1.0.0", "1.1.0"),
        transport="tools-json",
        tools=("add", "multiply", "evaluate"),
        tokens_per_tool=(60, 140),
        growth=1.0,
        findings=(_smell("evaluate", "tiny_description", (0,), words=1), _jit(False)),
        run_id={1: "calc-lite-1.1.0-rerun"},
    ),
)
