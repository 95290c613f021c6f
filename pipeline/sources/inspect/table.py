"""The reader: an Inspect AI log's samples, streamed, as task-grade JSON records.

Each sample x epoch becomes the text of one task-grade record, numbered from 1 in
the order the log gives them, in frames of the line reader's shape; the ingest then
judges them like the lines of a ``.jsonl`` file (validation, quarantine, dedupe by
run_id and content). The record holds nothing about where the log lies, so a log
read again from anywhere is the same records: skipped as duplicates.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.core.settings import MAX_EXPANDED_BYTES_ENV, MAX_REPORT_BYTES_ENV, set_by
from pipeline.sources.blocks import STILL_RUNNING, UNREADABLE_LOG
from pipeline.sources.discover import source_name
from pipeline.sources.inspect.columns import (
    ATTEMPT_FIELD,
    LIFTED_SAMPLE_FIELDS,
    MISSING_EXTRA,
    TASK_FIELD,
    TASK_ID_FIELD,
    UNREAD_SAMPLE_FIELDS,
    InspectMapping,
)
from pipeline.sources.inspect.extract import (
    EVAL_SUFFIX,
    JSON_SUFFIX,
    ScoreParts,
    as_name,
    components,
    equal_weights,
    first_named,
    grade_metadata,
    run_id,
    usage_totals,
)
from pipeline.sources.inspect.members import Directory, sample_member
from pipeline.sources.inspect.retries import lacking_reason
from pipeline.sources.limits import ReadLimits, failure_text, oversize_reason
from pipeline.sources.lines import LINE_SCHEMA, one_line
from pipeline.storage.lake import InputError

# Samples of a .eval log read (and held) at a time: at most this many, and members of at
# most this many bytes (as the ZIP directory records them) unless one alone is larger.
SAMPLES_PER_READ = 256
READ_BYTES = 64 * 1024 * 1024
# EvalLog.status while the eval runs; "success", "cancelled" and "error" are final.
RUNNING_STATUS = "started"
# A log left at "started" whose eval was retried: the retry's log, of the same task, lands
# the samples it had finished (carried over) and the rest.
RETRIED = "the Inspect eval was stopped and retried"
RUNNING = f"{STILL_RUNNING} (log status {RUNNING_STATUS!r})"
RUNNING_REASON = f"{RUNNING}: it is read once the eval ends"
RUNNING_NOTE = (
    f"{RUNNING}; it is read again by every ingest or nightly until the eval ends. An eval "
    "killed for good leaves its log so: eval_retry it; once the retry's log has landed "
    "(the samples this one finished carried over, once), this log counts as a duplicate of "
    "it and its row is resolved (a retry landed by this same ingest, by the next one)"
)


@dataclass(frozen=True)
class RunningEval:
    """What a log left at "started" says of its eval. eval_retry and eval_set run it again
    under a new eval id with the same task id, so samples of that task completed after this
    log began, under another eval id, are a retry's."""

    source: str
    task_id: str
    eval_id: str
    created: datetime


# Given a log left at "started", the eval id of a retry the lake holds, else None.
FindRetry = Callable[[RunningEval], str | None]


def retried_note(retry: str) -> str:
    return (
        f"{RETRIED}: its log is left at {RUNNING_STATUS!r}, and eval {retry} of the same task "
        "landed samples completed after it began (those it had finished carried over, once). "
        "Counted as a duplicate and not read again unless it changes; its quarantine row, if "
        "any, is resolved (outcome 'retried'). It can be moved out of the inbox"
    )


def _log_api() -> Any:
    try:
        import inspect_ai.log as log_api
    except ImportError as exc:
        raise InputError(MISSING_EXTRA) from exc
    return log_api


def _provenance(header: Any, sample: Any) -> dict[str, Any]:
    spec = header.eval
    provenance = {
        "eval_id": spec.eval_id,
        "run_id": spec.run_id,
        "eval_set_id": spec.eval_set_id,
        TASK_FIELD: spec.task,
        "task_version": spec.task_version,
        TASK_ID_FIELD: spec.task_id,
        "model": spec.model,
        "log_status": header.status,
        "sample_id": sample.id,
        "epoch": sample.epoch,
        ATTEMPT_FIELD: sample.uuid,
        "limit": None if sample.limit is None else sample.limit.type,
    }
    return {key: value for key, value in provenance.items() if value is not None}


def _failure(sample: Any, unscored: list[str]) -> list[str] | None:
    """Why the grader broke on this sample (an Inspect error, no score, NaN), else None."""
    if sample.error is not None:
        return [f"inspect sample error: {sample.error.message}"]
    if not sample.scores:
        return ["inspect sample has no score"]
    if unscored:
        return [f"inspect scorer left unscored (NaN): {', '.join(unscored)}"]
    return None


def _default_agent(header: Any) -> str | None:
    if header.eval.solver:
        return str(header.eval.solver)
    steps = [step.solver for step in header.plan.steps]
    return "+".join(steps) if steps else None


def sample_record(header: Any, sample: Any, mapping: InspectMapping) -> dict[str, Any]:
    """One sample x epoch of a log as a task-grade record (columns.py has the table)."""
    spec = header.eval
    meta = sample.metadata or {}
    scores = {
        name: ScoreParts(score.value, score.metadata, score.explanation)
        for name, score in (sample.scores or {}).items()
    }
    parts = components(scores)
    failure = _failure(sample, parts.unscored)
    subscores = {} if failure else parts.subscores
    usage = usage_totals(
        (usage.total_tokens, usage.total_cost) for usage in sample.model_usage.values()
    )
    graded_at = sample.completed_at or header.stats.completed_at or spec.created
    record: dict[str, Any] = {
        "run_id": run_id(spec.eval_id, str(sample.id), sample.epoch),
        "agent": as_name(first_named(mapping.agent_field, meta, spec.metadata))
        or _default_agent(header),
        "agent_version": as_name(first_named(mapping.agent_version_field, meta, spec.metadata))
        or spec.model,
        "problem_id": str(sample.id),
        "env_type": first_named(mapping.env_type_field, meta, spec.metadata)
        or mapping.env_types.get(spec.task),
        "graded_at": graded_at,
        "trial": sample.epoch,
        "cost_usd": usage.cost_usd,
        "tokens": usage.tokens,
        "wall_seconds": sample.total_time,
        **{key: meta[key] for key in LIFTED_SAMPLE_FIELDS if isinstance(meta.get(key), str)},
        "grade": {
            "subscores": subscores,
            "weights": equal_weights(subscores),
            "metadata": grade_metadata(
                parts.metadata, parts.explanation, meta, _provenance(header, sample)
            ),
            "env_internal_failure": failure is not None,
            "env_internal_failure_logs": failure or [],
        },
    }
    # Absent beats null for the optional fields: the record says only what the log said.
    return {key: value for key, value in record.items() if value is not None}


@dataclass(frozen=True)
class Unread:
    """In place of samples that could not be read: why, quarantined at their place."""

    reason: str


# A parsed JSON value's kind, as a reason names it.
JSON_KINDS: dict[type, str] = {
    dict: "an object",
    list: "an array",
    str: "a string",
    bool: "true or false",
    int: "a number",
    float: "a number",
    type(None): "null",
}

# The same kinds as DuckDB's json_type names them.
DUCKDB_JSON_KINDS: dict[str, str] = {
    duckdb_type: JSON_KINDS[python_type]
    for duckdb_type, python_type in (
        ("OBJECT", dict),
        ("ARRAY", list),
        ("VARCHAR", str),
        ("BOOLEAN", bool),
        ("BIGINT", int),
        ("UBIGINT", int),
        ("DOUBLE", float),
        ("NULL", type(None)),
    )
}

# What a .json log's sample Inspect refuses asks of the user. Its row has no text to
# replay: the log is read again once it changes.
MEND_JSON_SAMPLE = (
    "mend it in the log, or write the log again with inspect-ai; the log is read again once "
    "it changes, and the sample lands in its place"
)


def _eval_samples(
    log_api: Any, path: Path, header: Any, directory: Directory, expanded_bytes: int
) -> Iterator[Any]:
    """A .eval log's samples in read_eval_log_samples' order (sample ids x epochs), read
    a batch at a time with read_eval_log_samples_by_id: one ZIP directory parse per batch,
    where read_eval_log_samples opens the log and an event loop per sample (measured: 3.2
    against 16 ms of CPU a sample). A batch holds at most SAMPLES_PER_READ samples and
    READ_BYTES of members, as the ZIP directory records their sizes: Inspect keeps a
    sample's input, however long, so samples are held by their size, not their number. A
    batch that fails is read sample by sample: one that cannot be read is an ``Unread`` in
    its place, and the rest are read. Samples the header lists that the log lacks (an eval
    stopped early), and samples the log holds that its header does not list, are counted in
    one ``Unread`` at the end: nothing the log names or holds goes uncounted.

    Each sample is read if its member fits in what is left of ``expanded_bytes`` for the
    log (as a gzip file is bounded): one that does not is an ``Unread`` in its place, and
    the samples after it are read if they fit."""
    keys = _planned(header)
    if keys is None:
        raise RuntimeError("the log lists no sample ids (re-write it with a current inspect-ai)")
    unread = set(UNREAD_SAMPLE_FIELDS)
    missing: list[str] = []
    # Members named as Inspect names them: a listed sample without one is not in the log,
    # and asking Inspect for it costs a reading of the ZIP's directory. (Named otherwise by
    # some other inspect-ai, every sample is asked for.)
    named = not directory.samples or any(sample_member(*key) in directory.samples for key in keys)
    room = max(expanded_bytes - directory.header_bytes, 0)
    batch: list[tuple[Any, int]] = []
    held = 0
    for sample_id, epoch in keys:
        member = sample_member(sample_id, epoch)
        size = directory.samples.get(member, 0)
        if named and member not in directory.samples:
            missing.append(_listed_name(sample_id, epoch))
            continue
        if size > room:
            yield from _batch(log_api, path, batch, unread, missing)
            batch, held = [], 0
            yield Unread(
                f"sample {sample_id} epoch {epoch} is not read: it decompresses to {size} "
                f"bytes, over the {room} bytes left of the limit of {expanded_bytes} bytes for "
                f"a log (the limit is set by {set_by(MAX_EXPANDED_BYTES_ENV)}; the nightly reads "
                "the log again only once it changes: ingest it again under a higher limit)"
            )
            continue
        try:
            damaged = directory.damaged([member])
            why = f"is not read: {_damaged(*damaged[0])}" if damaged else None
        except Exception as exc:  # its compressed bytes are damaged: this sample's alone
            why = f"cannot be read ({failure_text(exc)})"
        if why is not None:
            yield from _batch(log_api, path, batch, unread, missing)
            batch, held = [], 0
            yield Unread(f"sample {sample_id} epoch {epoch} {why}")
            continue
        if batch and (len(batch) >= SAMPLES_PER_READ or held + size > READ_BYTES):
            yield from _batch(log_api, path, batch, unread, missing)
            batch, held = [], 0
        room -= size
        held += size
        batch.append((sample_id, epoch))
    yield from _batch(log_api, path, batch, unread, missing)
    yield from _uncounted(missing, len(directory.samples) - len(keys) + len(missing))


def _damaged(member: str, what: str) -> str:
    return (
        f"its member {member} {what} the log's ZIP directory records for it, so the file was "
        "damaged or altered after Inspect wrote it (Inspect would read the member to its end, "
        "however large, and not check it): copy the log again from where Inspect wrote it"
    )


def _batch(
    log_api: Any, path: Path, batch: list[tuple[Any, int]], unread: set[str], missing: list[str]
) -> Iterator[Any]:
    """One batch of samples, each the one asked for; ``missing`` gains those the log
    lacks."""
    if not batch:
        return
    try:
        found = list(
            zip(
                batch,
                log_api.read_eval_log_samples_by_id(str(path), batch, exclude_fields=unread),
                strict=True,
            )
        )
    except Exception:  # one bad sample: each is then read on its own
        found = []
        for sample_id, epoch in batch:
            try:
                sample = log_api.read_eval_log_sample(
                    str(path), id=sample_id, epoch=epoch, exclude_fields=unread
                )
            except IndexError:
                missing.append(_listed_name(sample_id, epoch))
                continue
            except Exception as exc:  # this sample's alone, quarantined
                why = f"sample {sample_id} epoch {epoch} cannot be read ({failure_text(exc)})"
                sample = Unread(why)
            found.append(((sample_id, epoch), sample))
    for (sample_id, epoch), sample in found:
        if isinstance(sample, Unread) or (sample.id, sample.epoch) == (sample_id, epoch):
            yield sample
        else:
            # Its member holds another sample: landed as that one it would clash with it.
            yield Unread(
                f"sample {sample_id} epoch {epoch} is not read: its member holds sample "
                f"{sample.id} epoch {sample.epoch} (the log's members are misnamed)"
            )


def _planned(header: Any) -> list[tuple[Any, int]] | None:
    """The samples the log's header lists, (sample id, epoch), in Inspect's order; None
    when it lists no sample ids (a log of an old inspect-ai)."""
    ids = header.eval.dataset.sample_ids
    if ids is None:
        return None
    epochs = header.eval.config.epochs or 1
    return [(sample_id, epoch) for sample_id in ids for epoch in range(1, epochs + 1)]


def _uncounted(missing: list[str], unlisted: int, unnamed: int = 0) -> Iterator[Unread]:
    """One entry for the samples the header lists that the log lacks, one for those the log
    holds that the header does not list: nothing the log names or holds goes uncounted.
    ``unnamed``: samples quarantined in their place whose id could not be read (one of them
    may be a sample said to be lacking)."""
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        why = "an eval stopped early" + (
            ", or one of the samples quarantined above whose id is unreadable" if unnamed else ""
        )
        yield Unread(lacking_reason(len(missing), why, shown))
    if unlisted > 0:
        yield Unread(
            f"{unlisted} sample(s) in the log are not among the sample ids its header lists: "
            "not read (re-write the log with a current inspect-ai)"
        )


def _samples(
    log_api: Any, path: Path, header: Any, directory: Directory | None, expanded_bytes: int
) -> Iterator[Any]:
    """The log's samples, at most SAMPLES_PER_READ held at a time for a .eval log; a .json
    log is one JSON document, read whole (within the report size limit the caller checked).
    Either way, what the header lists and the log lacks (or holds unlisted and unread) is
    counted."""
    if directory is None:
        yield from _json_samples(log_api, path, header)
    else:
        yield from _eval_samples(log_api, path, header, directory, expanded_bytes)


def _document(path: Path) -> Any:
    """A .json log's document, read whole: the caller checked its size against the report
    limit. NaN and Infinity are numbers, as Inspect's parser reads them."""
    return json.loads(path.read_bytes())


@dataclass(frozen=True)
class SampleText:
    """A .json log's sample as its JSON text, parsed on its own (``_log_samples``), with the
    JSON text of its id and epoch (None when it has none)."""

    text: str
    id: str | None
    epoch: str | None


def _log_samples(path: Path) -> list[Any]:
    """A .json log's samples, parsed; or, where the document nests past what Python's json
    module recurses, each sample's text, split by DuckDB's parser (which does not recurse)
    and parsed alone, so that the sample nested too deep fails alone."""
    try:
        document = _document(path)
    except RecursionError:
        return _sample_texts(path)
    if not isinstance(document, dict):
        raise ValueError(f"the log is {_json_kind(document)}, not a JSON object")
    samples = document.pop("samples", None)
    del document  # its header was read (and validated) by itself
    if samples is None:  # an eval that wrote none: the header's samples are counted
        return []
    if not isinstance(samples, list):
        raise ValueError(f"its samples are not a list but {_json_kind(samples)}")
    return samples


def _sample_texts(path: Path) -> list[Any]:
    from pipeline.core.sql import connect, sql_text

    con = connect()
    try:
        query = sql_text("ingest/inspect_json_samples.sql")
        ((log_type, samples_type, texts),) = con.execute(
            query, [path.read_text(encoding="utf-8")]
        ).fetchall()
    finally:
        con.close()
    if log_type != "OBJECT":
        raise ValueError(f"the log is {DUCKDB_JSON_KINDS[log_type]}, not a JSON object")
    if samples_type is None:
        return []
    if samples_type != "ARRAY":
        raise ValueError(f"its samples are not a list but {DUCKDB_JSON_KINDS[samples_type]}")
    return [SampleText(**sample) for sample in texts]


def _json_samples(log_api: Any, path: Path, header: Any) -> Iterator[Any]:
    """A .json log's samples in its order, each validated alone as Inspect validates a .eval
    log's sample (UNREAD_SAMPLE_FIELDS left out): one Inspect refuses is an ``Unread`` in
    its place, naming it, and the rest are read. (read_eval_log validates the document
    whole: one bad sample failed every other.) Each sample's parsed JSON is let go once it
    is validated, so the document and one sample are held, not every sample twice. What the
    header lists and the log lacks is counted after them, as for a .eval log (a refused
    sample whose id and epoch are readable is in the log, not lacking); what it holds
    unlisted was read in its place, so is not counted again."""
    samples = _log_samples(path)
    keys = _planned(header)
    # The listed samples no sample of the log names: when as many samples have no readable
    # id or epoch, those are they, and their rows say so (each is then accounted for in its
    # own place, which a mended log's read resolves, and no entry after them is needed).
    unnamed_raws = sum(_sample_key(raw) is None for raw in samples)
    lacking = [] if keys is None else _missing(keys, {_sample_key(raw) for raw in samples})
    told = lacking if lacking and len(lacking) == unnamed_raws else []
    held: set[tuple[Any, int]] = set()
    unnamed = 0
    for at in range(len(samples)):
        raw, samples[at] = samples[at], None
        try:
            if isinstance(raw, SampleText):
                raw = json.loads(raw.text)  # nested too deep: this sample's reason alone
            sample = _json_sample(log_api, header, raw, _deserializing_context())
        except Exception as exc:  # this sample's alone, quarantined in its place
            key = _sample_key(raw)
            if key is None:
                unnamed += 1
                name = f"the log's sample at position {at + 1} (its id or epoch is unreadable"
                name += (
                    f"; it is one of {', '.join(told)}, which no other sample is)" if told else ")"
                )
            else:
                held.add(key)
                name = f"sample {key[0]} epoch {key[1]}"
            yield Unread(f"{name} cannot be read ({failure_text(exc)}): {MEND_JSON_SAMPLE}")
            continue
        held.add((sample.id, sample.epoch))
        yield sample
    if keys is None:  # nothing listed to count against
        return
    missing = _missing(keys, held)
    if told and missing == told and unnamed == len(told):
        return  # each told in the place of a sample without an id
    # Every sample the log holds, listed or not, was read in its place: none is uncounted.
    yield from _uncounted(missing, 0, unnamed)


def _missing(keys: list[tuple[Any, int]], held: set[Any]) -> list[str]:
    """The listed samples (``keys``, in the header's order) not in ``held``, as rows name them."""
    return [_listed_name(*key) for key in keys if key not in held]


def _listed_name(sample_id: Any, epoch: int) -> str:
    """A sample the header lists, as a row counting the lacking ones names it."""
    return f"{sample_id} (epoch {epoch})"


def _deserializing_context() -> dict[str, Any] | None:
    """The context Inspect's own readers validate a log with, a fresh one a sample (as for a
    .eval log's), so its message cache holds one sample's. It is inspect-ai's, not exported
    (the extra allows any later inspect-ai): where one has moved it, samples are validated
    without it, as pydantic validates them by default, rather than every .json log failing."""
    try:
        from inspect_ai._util.constants import get_deserializing_context
    except ImportError:
        return None
    context: dict[str, Any] = get_deserializing_context()
    return context


def _json_kind(value: Any) -> str:
    return JSON_KINDS.get(type(value), type(value).__name__)


def _json_sample(log_api: Any, header: Any, raw: Any, context: dict[str, Any] | None) -> Any:
    """One sample of a .json log as Inspect's whole read makes it, but for the fields a
    task grade never needs (as a .eval log's are read)."""
    if isinstance(raw, dict):
        raw = {key: value for key, value in raw.items() if key not in UNREAD_SAMPLE_FIELDS}
    sample = log_api.EvalSample.model_validate(raw, context=context)
    # The log validator that names the score of an old inspect-ai's sample (one ``score``)
    # after the header's first scorer, as the whole read does.
    header.model_copy(update={"samples": [sample]}).populate_scorer_name_for_samples()
    return sample


def _sample_key(raw: Any) -> tuple[Any, int] | None:
    """A refused sample's (id, epoch), when it has them as Inspect types them."""
    if isinstance(raw, SampleText):
        try:
            raw = {
                name: json.loads(text)
                for name, text in (("id", raw.id), ("epoch", raw.epoch))
                if text is not None
            }
        except (RecursionError, ValueError):
            return None
    if not isinstance(raw, dict):
        return None
    sample_id, epoch = raw.get("id"), raw.get("epoch")
    if isinstance(sample_id, bool) or not isinstance(sample_id, int | str):
        return None
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        return None
    return sample_id, epoch


def _header(log_api: Any, path: Path) -> Any:
    """The log's header, read header only. Inspect reads a .json log whose header holds NaN
    or Infinity (a metric over no scores; its streaming parser refuses them) whole, samples
    and all: one sample it refuses would fail the header. So a .json log whose header read
    fails is read again without its samples; a header Inspect refuses still fails, with its
    own error."""
    try:
        return log_api.read_eval_log(str(path), header_only=True)
    except Exception:
        if not path.name.endswith(JSON_SUFFIX):
            raise
        document = _document(path)
        if not isinstance(document, dict):
            raise
    document.pop("samples", None)
    rest = json.dumps(document).encode()  # NaN written as Inspect writes it (and reads it)
    del document
    return log_api.read_eval_log(io.BytesIO(rest), header_only=True, format="json")


def _running(path: Path, header: Any) -> RunningEval | None:
    """None when the log does not say when its eval began, with an offset: then no retry
    can be told from it."""
    try:
        created = datetime.fromisoformat(header.eval.created)
    except (TypeError, ValueError):
        return None
    if created.tzinfo is None:
        return None
    return RunningEval(source_name(path), header.eval.task_id, header.eval.eval_id, created)


def _frame(source: str, first: int, raws: list[str]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "source": [source] * len(raws),
            "line": list(range(first, first + len(raws))),
            "raw": raws,
            "not_utf8": [False] * len(raws),
            "file_problem": [None] * len(raws),
        },
        schema=LINE_SCHEMA,
    )


def inspect_frames(
    path: Path,
    limits: ReadLimits,
    mapping: InspectMapping | None = None,
    notes: list[str] | None = None,
    find_retry: FindRetry | None = None,
) -> Iterator[tuple[pl.DataFrame, int]]:
    """Frames of numbered task-grade records, one per sample x epoch, each with its bytes.

    A log that cannot be opened is one entry at line 0 with the reason (quarantined
    whole); one that fails part way keeps the records read so far, and the rest is one
    entry after them. At most ``chunk_lines`` records are held at a time. A log still
    running gets a note in ``notes`` on every read: from the second on, its entry is
    counted as seen, and the note says why the file is read again. One whose eval
    ``find_retry`` finds retried gives nothing, and a note saying so.
    """
    source = source_name(path)
    chosen = mapping or InspectMapping()
    log_api = _log_api()
    try:
        size = path.stat().st_size
        if path.name.endswith(JSON_SUFFIX) and size > limits.report_bytes:
            reason = oversize_reason(
                size, limits.report_bytes, MAX_REPORT_BYTES_ENV, "log", kept=False
            )
            yield one_line(source, 0, None, reason), 0
            return
        directory = Directory.of(path) if path.name.endswith(EVAL_SUFFIX) else None
        if directory is not None and directory.header_bytes > limits.report_bytes:
            reason = oversize_reason(
                directory.header_bytes,
                limits.report_bytes,
                MAX_REPORT_BYTES_ENV,
                "log header",
                kept=False,
            )
            yield one_line(source, 0, None, reason), 0
            return
        if directory is not None and (damaged := directory.damaged(directory.header)):
            yield one_line(source, 0, None, f"log header: {_damaged(*damaged[0])}"), 0
            return
        header = _header(log_api, path)
    except Exception as exc:  # any failure to open the log is the file's, quarantined whole
        yield one_line(source, 0, None, f"{UNREADABLE_LOG} ({failure_text(exc)})"), 0
        return
    if header.status == RUNNING_STATUS:
        running = _running(path, header)
        retry = None if find_retry is None or running is None else find_retry(running)
        if retry is not None:
            # Its samples are the retry's: nothing of it is read.
            if notes is not None:
                notes.append(f"{source}: {retried_note(retry)}")
            return
        # Read once the eval has ended: its samples then come in their final order, with the
        # log's final status, so none is numbered twice or clashes with its earlier self.
        if notes is not None:
            notes.append(f"{source}: {RUNNING_NOTE}")
        yield one_line(source, 0, None, RUNNING_REASON), 0
        return
    pending: list[str] = []
    pending_bytes = 0
    next_line = 1
    samples = _samples(log_api, path, header, directory, limits.expanded_bytes)
    while True:
        try:
            sample = next(samples, None)
            if sample is None:
                break
            if isinstance(sample, Unread):
                # Its place in the log's order, quarantined with why.
                if pending:
                    yield _frame(source, next_line, pending), pending_bytes
                    next_line += len(pending)
                    pending, pending_bytes = [], 0
                yield one_line(source, next_line, None, sample.reason), 0
                next_line += 1
                continue
        except Exception as exc:  # a log that breaks part way: the rest is one entry
            if pending:
                yield _frame(source, next_line, pending), pending_bytes
                next_line += len(pending)
            if next_line == 1:
                # No sample read at all (say, a log without sample ids): the whole log.
                yield (
                    one_line(source, 0, None, f"{UNREADABLE_LOG} ({failure_text(exc)})"),
                    0,
                )
                return
            reason = (
                f"Inspect AI log stopped reading here ({failure_text(exc)}): the rest is not read"
            )
            yield one_line(source, next_line, None, reason), 0
            return
        try:
            raw = json.dumps(sample_record(header, sample, chosen), default=str)
        except Exception as exc:  # this sample's alone (nested past what Python recurses)
            if pending:
                yield _frame(source, next_line, pending), pending_bytes
                next_line += len(pending)
                pending, pending_bytes = [], 0
            reason = f"sample {sample.id} epoch {sample.epoch} cannot be made a task grade"
            yield one_line(source, next_line, None, f"{reason} ({failure_text(exc)})"), 0
            next_line += 1
            continue
        pending.append(raw)
        pending_bytes += len(raw)
        if len(pending) >= limits.chunk_lines or pending_bytes >= limits.chunk_bytes:
            yield _frame(source, next_line, pending), pending_bytes
            next_line += len(pending)
            pending, pending_bytes = [], 0
    if pending:
        yield _frame(source, next_line, pending), pending_bytes
