-- failure_reasons: each scored run whose gate failed, beside its gate component's
-- metadata (every key under "<gate>.", as one JSON object) and the text of "<gate>.reason",
-- so why it failed reads without parsing JSON. A key the metadata names twice has two
-- run_metadata rows: both are in gate_metadata, and reason is the least text (min), one
-- answer whatever order the rows are met in. The keys under the gate begin as run_metadata
-- writes them (json_key_prefix: quoted when the name is not a plain identifier,
-- "crash-check".reason).
create or replace view failure_reasons as
with failed as (
    select run_id, agent, agent_version, problem_id, env_type, defect_id, cwe, trial,
           gate_component, score, penalty_total
    from task_runs
    where status = 'scored' and gate_passed = false
),
gates as (
    select *, json_key_prefix(gate_component) as gate_prefix
    from failed
),
gate_metadata as (
    select
        f.run_id,
        -- Written out in key order (json_group_object, a macro here, takes no order by): the
        -- order a join meets rows in varies, and with it the text. A key named twice stays.
        (
            '{' || string_agg(
                to_json(substr(m.key, length(f.gate_prefix) + 1)) || ':' || m.value, ','
                order by m.key, m.value
            ) || '}'
        )::json as gate_metadata,
        min(case when m.key = f.gate_prefix || 'reason' then m.value ->> '$' end) as reason
    from gates as f
    -- A list over run_metadata's limit has no text (null): its items stand for it.
    join run_metadata as m
        on m.run_id = f.run_id and starts_with(m.key, f.gate_prefix)
        and m.value is not null
    -- A list kept whole says what it holds once: its items (and what is below them) are
    -- left out, as compare's reasons leave them (pipeline/compare/reasons.py). A key is
    -- checked against the list it is nearest below (the key cut before its last [i]): a list
    -- holding that one is longer, so when the nearest has no text, none above it has.
    anti join run_metadata as whole
        on whole.run_id = m.run_id and whole.value is not null
        and whole.key = regexp_replace(m.key, '^(.*)\[\d+\].*$', '\1') and whole.key <> m.key
    group by f.run_id
)
select f.*, g.reason, g.gate_metadata
from failed as f
left join gate_metadata as g using (run_id)
