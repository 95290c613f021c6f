"""The comparison as one self-contained HTML page: inline SVG drawn here, no scripts.

Nothing is fetched to view it: no JS, no external CSS or fonts, and a
Content-Security-Policy that forbids any load. Every text that comes from data
(agent, versions, problem ids, component names, metadata reasons) is escaped:
scalars with :func:`html.escape`, columns with :func:`escape_expr`, which does
the same replacements as a vectorized Polars expression.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any, Final

import polars as pl

from pipeline.compare.names import ALL_ENV_TYPES
from pipeline.compare.text import holm_family, number, p_value

ENV_COLOURS: Final[Mapping[str, str]] = {
    "exploit": "#d62728",
    "detect": "#1f77b4",
    "patch": "#2ca02c",
    "audit": "#9467bd",
}
OTHER_COLOUR: Final = "#7f7f7f"
VERDICT_COLOURS: Final[Mapping[str, str]] = {
    "regression": "#c0392b",
    "improvement": "#1e8449",
    "no_change": "#7f8c8d",
}

# The same replacements, in the same order, as html.escape(s, quote=True).
_ESCAPES: Final = (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;"), ("'", "&#x27;"))

_CSS: Final = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right;font-size:.9em}
th{background:#f3f3f3}td.t{text-align:left}
.verdict{font-weight:bold;padding:.1em .5em;border-radius:.3em;color:#fff}
.note{color:#555;max-width:60em}.env-ok{font-size:.6em;color:#555}
.env-regression{font-size:.7em}
svg{background:#fff;border:1px solid #ddd}
svg text{font-size:11px;fill:#333}
"""


def esc(value: Any) -> str:
    """Escape one scalar for HTML text or an attribute value."""
    return html.escape("" if value is None else str(value), quote=True)


def escape_expr(expr: pl.Expr) -> pl.Expr:
    """:func:`html.escape` (quote=True) as a Polars expression over a string column."""
    out = expr.cast(pl.String).fill_null("")
    for raw, entity in _ESCAPES:
        out = out.str.replace_all(raw, entity, literal=True)
    return out


def _num(value: Any, digits: int = 3, signed: bool = False) -> str:
    return esc(number(value, digits, signed=signed))


# --------------------------------------------------------------------------- charts


def interval_chart(rows: Sequence[Mapping[str, Any]], *, width: int = 640) -> str:
    """Forest plot: each row's delta as a dot and its interval as a bar, zero marked.

    ``rows`` are summaries (overall plus one per env type, at most a handful).
    """
    row_h, top, left, right = 34, 30, 150, 30
    height = top + row_h * max(len(rows), 1) + 30
    values = [0.0]
    for row in rows:
        values += [
            v for v in (row.get("delta"), row.get("ci_low"), row.get("ci_high")) if v is not None
        ]
    lo, hi = min(values), max(values)
    pad = max((hi - lo) * 0.1, 0.01)
    lo, hi = lo - pad, hi + pad
    plot_w = width - left - right

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot_w

    parts = [
        f'<svg id="env-chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="difference per env type with 95% intervals">',
        f'<line class="zero" x1="{x(0.0):.1f}" y1="{top - 10}" x2="{x(0.0):.1f}" '
        f'y2="{height - 25}" stroke="#444" stroke-dasharray="4 3"/>',
        f'<text x="{x(0.0):.1f}" y="{top - 14}" text-anchor="middle">0</text>',
        f'<text x="{left}" y="{height - 8}">{lo:+.3f}</text>',
        f'<text x="{width - right}" y="{height - 8}" text-anchor="end">{hi:+.3f}</text>',
    ]
    for i, row in enumerate(rows):
        y = top + row_h * i + row_h / 2
        colour = VERDICT_COLOURS.get(str(row.get("verdict")), OTHER_COLOUR)
        label = esc(row.get("label"))
        parts.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
        low, high, delta = row.get("ci_low"), row.get("ci_high"), row.get("delta")
        tip = esc(
            f"{row.get('label')}: delta {_num(delta, 4, True)}, interval "
            f"[{_num(low, 4, True)}, {_num(high, 4, True)}], n={row.get('n')}, {row.get('verdict')}"
        )
        if low is not None and high is not None:
            parts.append(
                f'<line class="ci" x1="{x(low):.1f}" y1="{y:.1f}" x2="{x(high):.1f}" '
                f'y2="{y:.1f}" stroke="{colour}" stroke-width="3"><title>{tip}</title></line>'
            )
        if delta is not None:
            parts.append(
                f'<circle class="delta" cx="{x(delta):.1f}" cy="{y:.1f}" r="5" '
                f'fill="{colour}"><title>{tip}</title></circle>'
            )
    parts.append("</svg>")
    return "".join(parts)


def scatter_chart(pairs: pl.DataFrame, *, size: int = 420) -> str:
    """Per-problem scatter, baseline score (x) against candidate score (y), y = x drawn.

    Points below the diagonal regressed. One ``<circle>`` per problem, built as
    a vectorized string expression (no loop over problems).
    """
    margin = 40
    plot = size - 2 * margin
    if pairs.height:
        bounds = pairs.select(
            lo=pl.min_horizontal(pl.col("baseline_score").min(), pl.col("candidate_score").min()),
            hi=pl.max_horizontal(pl.col("baseline_score").max(), pl.col("candidate_score").max()),
        ).row(0)
        lo = min(0.0, float(bounds[0]))
        hi = max(1.0, float(bounds[1]))
    else:
        lo, hi = 0.0, 1.0
    span = hi - lo if hi > lo else 1.0

    def sx(col: str) -> pl.Expr:
        return ((pl.col(col) - lo) / span * plot + margin).round(1)

    def sy(col: str) -> pl.Expr:
        return (size - margin - (pl.col(col) - lo) / span * plot).round(1)

    colour = (
        pl.col("env_type")
        .replace_strict(dict(ENV_COLOURS), default=OTHER_COLOUR, return_dtype=pl.String)
        .fill_null(OTHER_COLOUR)
    )
    tip = escape_expr(
        pl.format(
            "{} ({}): baseline {}, candidate {}",
            pl.col("problem_id"),
            pl.col("env_type"),
            pl.col("baseline_score").round(4),
            pl.col("candidate_score").round(4),
        )
    )
    circles = (
        pairs.select(
            pl.format(
                '<circle class="pt" cx="{}" cy="{}" r="3.5" fill="{}" fill-opacity="0.7">'
                "<title>{}</title></circle>",
                sx("baseline_score"),
                sy("candidate_score"),
                colour,
                tip,
            ).alias("svg")
        )
        .get_column("svg")
        .str.join("")
        .item()
        if pairs.height
        else ""
    )
    x0, x1 = margin, size - margin
    y0, y1 = size - margin, margin
    legend = "".join(
        f'<circle cx="{margin + 10 + 80 * i}" cy="14" r="4" fill="{c}"/>'
        f'<text x="{margin + 18 + 80 * i}" y="18">{esc(name)}</text>'
        for i, (name, c) in enumerate(ENV_COLOURS.items())
    )
    return (
        f'<svg id="scatter" xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size}" '
        f'viewBox="0 0 {size} {size}" role="img" aria-label="baseline against candidate score">'
        f'<rect x="{x0}" y="{y1}" width="{plot}" height="{plot}" fill="none" stroke="#999"/>'
        f'<line class="diagonal" x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="#444" '
        'stroke-dasharray="4 3"/>'
        f'<text x="{x0}" y="{size - 22}">{lo:g}</text>'
        f'<text x="{x1}" y="{size - 22}" text-anchor="end">{hi:g}</text>'
        f'<text x="{size / 2}" y="{size - 6}" text-anchor="middle">baseline score</text>'
        f'<text x="12" y="{size / 2}" transform="rotate(-90 12 {size / 2})" '
        'text-anchor="middle">candidate score</text>'
        f"{legend}{circles}</svg>"
    )


# --------------------------------------------------------------------------- tables


def _table(frame: pl.DataFrame, columns: Sequence[tuple[str, str, bool]], table_id: str) -> str:
    """An HTML table from a frame: ``(column, header, is_text)``; cells escaped vectorized."""
    head = "".join(f"<th>{esc(header)}</th>" for _, header, _ in columns)
    if frame.height == 0:
        body = f'<tr><td class="t" colspan="{len(columns)}">none</td></tr>'
    else:
        cells = []
        for col, _, is_text in columns:
            value = pl.col(col)
            if not is_text and frame.schema[col].is_float():
                # Four significant digits: a p-value of 7.5e-06 is not 0.0.
                value = value.round_sig_figs(4)
            cls = ' class="t"' if is_text else ""
            cells.append(pl.format("<td" + cls + ">{}</td>", escape_expr(value)))
        body = (
            frame.select(pl.concat_str([pl.lit("<tr>"), *cells, pl.lit("</tr>")]).alias("r"))
            .get_column("r")
            .str.join("")
            .item()
        )
    return (
        f'<table id="{esc(table_id)}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def _rows_table(
    rows: Sequence[Mapping[str, Any]],
    schema: Mapping[str, pl.DataType],
    columns: Sequence[tuple[str, str, bool]],
    table_id: str,
) -> str:
    """An HTML table of the report's ``rows``, read as a frame of ``schema``."""
    picked = [{k: row.get(k) for k in schema} for row in rows]
    frame = (
        pl.DataFrame(picked, schema=dict(schema), orient="row")
        if picked
        else pl.DataFrame(schema=dict(schema))
    )
    return _table(frame, columns, table_id)


REGRESSED_SCHEMA: Final[Mapping[str, pl.DataType]] = {
    "problem_id": pl.String(),
    "env_type": pl.String(),
    "baseline_score": pl.Float64(),
    "candidate_score": pl.Float64(),
    "delta": pl.Float64(),
    "failing_kind": pl.String(),
    "failing_component": pl.String(),
    "failing_reason": pl.String(),
}
COMPONENT_SCHEMA: Final[Mapping[str, pl.DataType]] = {
    "component": pl.String(),
    "baseline": pl.Float64(),
    "candidate": pl.Float64(),
    "delta": pl.Float64(),
}


# --------------------------------------------------------------------------- page


def _cost_row(version: Any, c: Mapping[str, Any]) -> str:
    return (
        f'<tr><td class="t">{esc(version)}</td><td>{_num(c["runs"])}</td>'
        f"<td>{_num(c['score_per_run'])}</td><td>{_num(c['cost_usd'], 4)}</td>"
        f"<td>{_num(c['tokens'], 0)}</td><td>{_num(c['wall_seconds'], 1)}</td></tr>"
    )


def _env_badges(report: Mapping[str, Any]) -> str:
    """Beside the overall verdict: each env type that regressed after Holm, or that none did."""
    regressed = report["regressed_env_types"]
    if not regressed:
        k = report["gate"]["holm_env_types"]
        return f'<span class="env-ok">no env type regressed ({esc(holm_family(k))})</span>'
    colour = VERDICT_COLOURS["regression"]
    return " ".join(
        f'<span class="verdict env-regression" style="background:{colour}">'
        f"{esc(env)}: regression</span>"
        for env in regressed
    )


ENV_SCHEMA: Final[Mapping[str, pl.DataType]] = {
    "env_type": pl.String(),
    "paired_problems": pl.Int64(),
    "baseline_mean": pl.Float64(),
    "candidate_mean": pl.Float64(),
    "delta": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "p_value": pl.Float64(),
    "p_value_holm": pl.Float64(),
    "verdict": pl.String(),
    "gate_verdict": pl.String(),
}


def _forest_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The chart's rows: every paired problem (``all``), then each env type."""
    overall = {**report, "env_type": ALL_ENV_TYPES}
    return [
        {
            "label": row["env_type"],
            "delta": row["delta"],
            "ci_low": row["ci_low"],
            "ci_high": row["ci_high"],
            "verdict": str(row["verdict"]),
            "n": row["paired_problems"],
        }
        for row in [overall, *report["per_env_type"]]
    ]


def _env_table(report: Mapping[str, Any], pct: int) -> str:
    return _rows_table(
        report["per_env_type"],
        ENV_SCHEMA,
        [
            ("env_type", "env type", True),
            ("paired_problems", "paired", False),
            ("baseline_mean", "baseline", False),
            ("candidate_mean", "candidate", False),
            ("delta", "delta", False),
            ("ci_low", f"{pct}% low", False),
            ("ci_high", f"{pct}% high", False),
            ("p_value", "p", False),
            ("p_value_holm", "p (Holm)", False),
            ("verdict", "verdict", True),
            ("gate_verdict", "gate (Holm)", True),
        ],
        "per-env",
    )


REGRESSED_COLUMNS: Final = (
    ("problem_id", "problem", True),
    ("env_type", "env type", True),
    ("baseline_score", "baseline", False),
    ("candidate_score", "candidate", False),
    ("delta", "delta", False),
    ("failing_component", "failing component", True),
    ("failing_kind", "kind", True),
    ("failing_reason", "reason (grader metadata)", True),
)
COMPONENT_COLUMNS: Final = (
    ("component", "component", True),
    ("baseline", "baseline", False),
    ("candidate", "candidate", False),
    ("delta", "delta", False),
)


def _summary(report: Mapping[str, Any], pct: int) -> str:
    """The headline numbers as one table row."""
    boot = report["bootstrap"]
    return f"""<table id="summary"><thead><tr><th>paired problems</th><th>baseline mean</th>
<th>candidate mean</th><th>delta</th><th>{pct}% interval ({esc(report["method"])})</th>
<th>p</th><th>bootstrap interval</th><th>unpaired (b / c)</th><th>grader errors (b / c)</th>
</tr></thead><tbody><tr><td>{_num(report["paired_problems"])}</td>
<td>{_num(report["baseline_mean"])}</td><td>{_num(report["candidate_mean"])}</td>
<td>{_num(report["delta"], 4, True)}</td>
<td>[{_num(report["ci_low"], 4, True)}, {_num(report["ci_high"], 4, True)}]</td>
<td>{esc(p_value(report["p_value"]))}</td>
<td>[{_num(boot["ci_low"], 4, True)}, {_num(boot["ci_high"], 4, True)}]</td>
<td>{_num(report["n_unpaired_baseline"])} / {_num(report["n_unpaired_candidate"])}</td>
<td>{_num(report["grader_errors"]["baseline"])} / {_num(report["grader_errors"]["candidate"])}</td>
</tr></tbody></table>"""


def _header(report: Mapping[str, Any]) -> str:
    """The page's head, its title with the verdict, the gate's decision and the message."""
    verdict = str(report["verdict"])
    title = f"{esc(report['agent'])}: {esc(report['candidate'])} against {esc(report['baseline'])}"
    colour = VERDICT_COLOURS.get(verdict, OTHER_COLOUR)
    warn = (
        '<p class="note"><strong>Too few paired problems to conclude anything.</strong></p>'
        if report.get("insufficient_data")
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{title}</title><style>{_CSS}</style></head>
<body>
<h1>{title} <span class="verdict" style="background:{colour}">{esc(verdict)}</span>
{_env_badges(report)}</h1>
<p id="gate" class="note"><strong>{esc(report["gate"]["message"])}</strong></p>
<p class="note">{esc(report["message"])}</p>{warn}"""


def _why(report: Mapping[str, Any]) -> str:
    """The decomposition, the paired pass rate and the cost per run."""
    pr = report["pass_rate_problems_paired"]
    cost = report["cost"]
    dec = report["decomposition"]
    components = _rows_table(
        report["components"], COMPONENT_SCHEMA, COMPONENT_COLUMNS, "components"
    )
    return f"""<h2>Change in mean score by component</h2>
<p class="note">Mean contribution over paired problems; the deltas add up to the change in the
weighted sum ({_num(dec["delta_weighted"], 4, True)}); penalties changed by
{_num(dec["delta_penalty"], 4, True)}, clamping by {_num(dec["clamp_effect"], 4, True)}.</p>
{components}
<h2>Pass rate over paired problems (pass_rate_problems)</h2>
<p class="note">{esc(pr["definition"])}. Baseline {_num(pr["baseline"])}, candidate
{_num(pr["candidate"])}; {_num(pr["discordant"])} discordant problems (baseline only
{_num(pr["baseline_only"])}, candidate only {_num(pr["candidate_only"])}); exact McNemar
p = {esc(p_value(pr["p_value"]))}.</p>
<h2>Cost per run</h2>
<table id="cost"><thead><tr><th>version</th><th>runs</th><th>mean score</th><th>cost_usd</th>
<th>tokens</th><th>wall_seconds</th></tr></thead><tbody>
{_cost_row(report["baseline"], cost["baseline"])}
{_cost_row(report["candidate"], cost["candidate"])}
</tbody></table>"""


def render_comparison(report: Mapping[str, Any], pairs: pl.DataFrame) -> str:
    """The whole page for one comparison (``report`` is the ``compare --json`` document)."""
    pct = round(float(report.get("confidence", 0.95)) * 100)
    regressed = _rows_table(
        report["regressed_problems"], REGRESSED_SCHEMA, REGRESSED_COLUMNS, "regressed"
    )
    return f"""{_header(report)}
{_summary(report, pct)}
<h2>Difference per env type ({pct}% paired t intervals)</h2>
{interval_chart(_forest_rows(report))}
{_env_table(report, pct)}
<h2>Per problem: baseline against candidate</h2>
<p class="note">Trials averaged within each problem; points below the dashed diagonal regressed.</p>
{scatter_chart(pairs)}
<h2>Problems that regressed most</h2>
{regressed}
{_why(report)}
</body></html>
"""
