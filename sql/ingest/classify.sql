-- For lines that are JSON: is it an object, which kind of record it is, and a
-- content hash over the minified text (whitespace does not make a new record).
-- Input: view `valid_lines` (row_nr, raw). Output: row_nr, json_kind, record_kind, content_hash,
-- has_non_finite_hint.
select
    row_nr,
    json_type(raw) as json_kind,
    case
        when json_type(raw) = 'OBJECT'
            and json_exists(raw, '$.server')
            and json_exists(raw, '$.findings') then 'surface'
        when json_type(raw) = 'OBJECT' then 'task'
    end as record_kind,
    sha256(json(raw)::varchar) as content_hash,
    -- Cheap pre-filter: only lines with a non-finite literal need the full tree walk.
    regexp_matches(raw, '(NaN|Infinity|[0-9][eE][+]?[0-9]{3,})') as has_non_finite_hint
from valid_lines
