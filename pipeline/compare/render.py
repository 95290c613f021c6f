"""The comparison and the history as terminal blocks: rich tables and lines of markup.

Nothing here prints: each function returns the blocks in order, and the CLI prints
them (a table fitted to the console's width, a line as it is).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from rich.markup import escape as markup_escape
from rich.table import Table

from pipeline.compare import metrics, stats
from pipeline.compare.text import (
    UTC,
    delta,
    holm_family,
    interval,
    invisible_differences,
    number,
    p_value,
    without_invisible,
)
from pipeline.core.visible import visible

Block = Table | str

_VERDICT_STYLE: Final[Mapping[str, str]] = {
    stats.REGRESSION: "bold red",
    stats.IMPROVEMENT: "bold green",
    stats.NO_CHANGE: "yellow",
}


def escape(text: str) -> str:
    """Text from data in a line of markup: its brackets literal, its control characters seen."""
    return markup_escape(visible(text))


def _verdict_text(verdict: str) -> str:
    style = _VERDICT_STYLE.get(verdict, "")
    return f"[{style}]{verdict}[/]" if style else verdict


def _table(title: str, columns: Sequence[str], **options: Any) -> Table:
    """A table with ``columns`` right-aligned (the numbers' side)."""
    table = Table(title=title, **options)
    for col in columns:
        table.add_column(col, justify="right")
    return table


def _headline(report: Mapping[str, Any]) -> Table:
    title = (
        f"{escape(report['agent'])}: {escape(report['candidate'])} vs "
        f"{escape(report['baseline'])} (method: {report['method']}, "
        f"{round(report['confidence'] * 100)}% interval)"
    )
    head = Table(title=title, show_header=True)
    for col in ("paired", "baseline", "candidate", "delta", "interval", "p", "verdict", "env"):
        head.add_column(col, justify="right", no_wrap=col in {"interval", "verdict"})
    regressed = report["regressed_env_types"]
    head.add_row(
        str(report["paired_problems"]),
        number(report["baseline_mean"]),
        number(report["candidate_mean"]),
        delta(report["delta"], 3),
        interval(report["ci_low"], report["ci_high"]),
        p_value(report["p_value"]),
        _verdict_text(report["verdict"]),
        _verdict_text(stats.REGRESSION) + ": " + escape(", ".join(regressed))
        if regressed
        else "none regressed",
    )
    return head


def _notes(report: Mapping[str, Any]) -> list[Block]:
    """The gate's decision, the message, and what was left out of the pairing."""
    gate_ = report["gate"]
    style = "bold red" if gate_["fails"] else "green"
    errors_ = report["grader_errors"]
    boot = report["bootstrap"]
    return [
        f"[{style}]{escape(gate_['message'])}[/]",
        escape(report["message"]),
        f"unpaired problems: baseline {report['n_unpaired_baseline']}, candidate "
        f"{report['n_unpaired_candidate']}; grader errors excluded: baseline "
        f"{errors_['baseline']}, candidate {errors_['candidate']}; "
        f"bootstrap interval {interval(boot['ci_low'], boot['ci_high'])}",
    ]


def _per_env(report: Mapping[str, Any]) -> Table:
    k = report["gate"]["holm_env_types"]
    env = Table(title=f"per env type (gate: {holm_family(k)})")
    columns = ("env_type", "paired", "baseline", "candidate", "delta", "interval", "p", "p Holm")
    for col in (*columns, "verdict", "gate"):
        env.add_column(col, justify="right", no_wrap=col in {"env_type", "interval", "verdict"})
    for row in report["per_env_type"]:
        env.add_row(
            escape(row["env_type"]),
            str(row["paired_problems"]) + (" (few)" if row["insufficient_data"] else ""),
            number(row["baseline_mean"]),
            number(row["candidate_mean"]),
            delta(row["delta"], 3),
            interval(row["ci_low"], row["ci_high"]),
            p_value(row["p_value"]),
            p_value(row["p_value_holm"]),
            _verdict_text(row["verdict"]),
            _verdict_text(row["gate_verdict"]),
        )
    return env


def _paired_pass_rate(report: Mapping[str, Any]) -> str:
    pr = report["pass_rate_problems_paired"]
    return (
        f"pass_rate_problems over paired problems: baseline {number(pr['baseline'])}, candidate "
        f"{number(pr['candidate'])}; discordant {pr['discordant']} (baseline only "
        f"{pr['baseline_only']}, candidate only {pr['candidate_only']}), exact McNemar p = "
        f"{p_value(pr['p_value'])}"
    )


def comparison(report: Mapping[str, Any]) -> list[Block]:
    """Headline and gate, per env type, versions, components, regressions, cost."""
    return [
        _headline(report),
        *_notes(report),
        _per_env(report),
        version_metrics(
            "each version over all its scored runs and problems",
            [report["versions"]["baseline"], report["versions"]["candidate"]],
        ),
        _paired_pass_rate(report),
        _components(report),
        _regressed(report),
        _cost(report),
    ]


def _metric_cell(row: Mapping[str, Any], metric: str) -> str:
    """A metric's value over its interval."""
    low, high = row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
    return f"{number(row[metric])}\n{interval(low, high, signed=False)}"


def version_metrics(title: str, rows: Sequence[Mapping[str, Any]]) -> Table:
    """The metrics of :mod:`pipeline.compare.metrics`, one line per version."""
    table = Table(
        title=title,
        caption="*_runs: over scored runs; *_problems: over problems (trials averaged, a "
        "problem passes on a majority of its trials); rates: Wilson 95%; mean_score_runs: "
        "normal 95%; mean_score_problems: t 95%",
    )
    for col in ("version", "runs", "grader errors", "problems", *metrics.METRICS):
        table.add_column(col, justify="right", no_wrap=col == "version")
    for row in rows:
        table.add_row(
            escape(str(row["agent_version"])),
            str(row["runs"]),
            str(row["grader_errors"]),
            str(row["problems"]),
            *(_metric_cell(row, m) for m in metrics.METRICS),
        )
    return table


def _components(report: Mapping[str, Any]) -> Table:
    comp = _table(
        "change in mean score by component (contribution)",
        ("component", "baseline", "candidate", "delta"),
    )
    for row in report["components"]:
        name = escape(row["component"]) + (" (gate)" if row["is_gate"] else "")
        comp.add_row(
            name, number(row["baseline"]), number(row["candidate"]), delta(row["delta"], 3)
        )
    dec = report["decomposition"]
    comp.add_row("= weighted", "", "", delta(dec["delta_weighted"], 3))
    comp.add_row("− penalties", "", "", delta(dec["delta_penalty"], 3))
    comp.add_row("clamping", "", "", delta(dec["clamp_effect"], 3))
    return comp


def _regressed(report: Mapping[str, Any]) -> Table:
    reg = Table(title="problems that regressed most")
    for col in ("problem", "env", "baseline", "candidate", "delta", "failing", "reason"):
        reg.add_column(col)
    for row in report["regressed_problems"]:
        reg.add_row(
            escape(str(row["problem_id"])),
            escape(str(row["env_type"])),
            number(row["baseline_score"]),
            number(row["candidate_score"]),
            delta(row["delta"], 3),
            escape(str(row["failing_component"] or row["failing_kind"])),
            escape(str(row["failing_reason"] or "")),
        )
    return reg


def _cost(report: Mapping[str, Any]) -> Table:
    cost = _table(
        "cost per run (scored runs of paired problems)",
        ("version", "runs", "mean score", "cost_usd", "tokens", "wall_seconds"),
    )
    for label in ("baseline", "candidate"):
        c = report["cost"][label]
        cost.add_row(
            escape(report[label]),
            str(c["runs"]),
            number(c["score_per_run"]),
            number(c["cost_usd"], 4),
            number(c["tokens"], 0),
            number(c["wall_seconds"], 1),
        )
    return cost


def _step_cells(step: Mapping[str, Any] | None) -> tuple[str, str, str, str]:
    """A history row's step: the change with its interval, the verdict, env regressions,
    and the gate (what `compare --fail-on-regression` would say of it)."""
    if step is None:
        return "", "", "", ""
    text = f"{delta(step['delta'], 3)}\n{interval(step['ci_low'], step['ci_high'])}"
    text += "\n(few pairs)" if step["insufficient_data"] else ""
    regressed = step["regressed_env_types"]
    envs = (
        f"[bold red]{escape(', '.join(regressed))}[/]"
        if regressed
        else f"none of {step['gate']['holm_env_types']}"
    )
    gate_ = "[bold red]FAILS[/]" if step["gate"]["fails"] else "passes"
    return text, _verdict_text(step["verdict"]), envs, gate_


def _history_table(agent: str) -> Table:
    table = Table(
        title=f"{escape(agent)}: versions in order of first graded run",
        caption="mean_score_problems: mean over problems (trials averaged first), 95% t; "
        "pass_rate_problems: share of problems passing on a majority of trials, 95% Wilson; "
        "step = paired comparison with the previous version; env regressions after Holm "
        "over the env types",
    )
    table.add_column("version", no_wrap=True)
    table.add_column(f"first graded ({UTC})", min_width=10)
    table.add_column("runs", justify="right", min_width=4)
    table.add_column("problems", justify="right", min_width=4)
    table.add_column("mean_score_problems", min_width=14)
    table.add_column("pass_rate_problems", min_width=14)
    table.add_column("step Δ", min_width=16)
    table.add_column("verdict", no_wrap=True)
    table.add_column("env regressions (Holm)")
    table.add_column("gate", no_wrap=True)
    return table


def history(agent: str, rows: Sequence[Mapping[str, Any]]) -> list[Block]:
    """Every version with its metrics and its step against the one before."""
    table = _history_table(agent)
    for row in rows:
        first = row["first_graded_at"]
        step_text, verdict, envs, gate_ = _step_cells(row["step"])
        table.add_row(
            escape(str(row["agent_version"])),
            "" if first is None else escape(str(first)[:16]),
            str(row["runs"]),
            str(row["problems"]),
            _metric_cell(row, "mean_score_problems"),
            _metric_cell(row, "pass_rate_problems"),
            step_text,
            verdict,
            envs,
            gate_,
        )
    return [table, *_look_alikes([str(row["agent_version"]) for row in rows])]


def _look_alikes(versions: Sequence[str]) -> list[Block]:
    """A note for each pair of versions a reader may take for one, in the order of the
    later one, then the earlier. Only versions of one form (``text.without_invisible``) are
    compared: every pair of an agent's versions took 1.9 s at 2,000 (a build a commit)."""
    places: dict[str, list[int]] = {}
    for place, version in enumerate(versions):
        places.setdefault(without_invisible(version), []).append(place)
    pairs = sorted((b, a) for same in places.values() for i, b in enumerate(same) for a in same[:i])
    return [
        escape(
            f"note: {versions[a]!r} and {versions[b]!r} are two versions, told apart only by "
            f"{differences}"
        )
        for b, a in pairs
        if (differences := invisible_differences(versions[a], versions[b]))
    ]
