-- Lines holding a number no column can hold as written, with the first such path (in
-- document order) and its literal: a non-finite number (NaN, Infinity, nan, -inf, ... in
-- any case DuckDB's reader accepts, or a literal that overflows a double like 1e999), or an
-- integer outside the 64-bit signed range (DuckDB types 2^63..2^64-1 as UBIGINT and larger
-- integer literals as DOUBLE, rounded). Input: view `suspects` (row_nr, raw).
-- Output: row_nr, path, literal, number_problem ('non_finite' or 'integer_range').
with flagged as (
    select
        s.row_nr,
        t.id,
        t.fullkey as path,
        t.value::varchar as literal,
        case
            when t.type <> 'DOUBLE' or regexp_full_match(t.value::varchar, '-?[0-9]+')
                then 'integer_range'
            else 'non_finite'
        end as problem
    from suspects as s, json_tree(s.raw) as t
    -- DuckDB types every integer >= 0 as UBIGINT: only those past 2^63-1 are out of range.
    where (t.type = 'UBIGINT' and try_cast(t.value as ubigint) > 9223372036854775807)
        or (
            t.type = 'DOUBLE'
            and (
                not isfinite(try_cast(t.value as double))
                or regexp_full_match(t.value::varchar, '-?[0-9]+')
            )
        )
)
select
    row_nr,
    arg_min(path, id) as path,
    arg_min(literal, id) as literal,
    arg_min(problem, id) as number_problem
from flagged
group by row_nr
