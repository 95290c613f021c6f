-- non_finite.sql for large records, with the same output and the same rule: the first path
-- (in document order) holding a number no column can hold as written (a non-finite number
-- in any case DuckDB's reader accepts, a literal that overflows a double, or an integer
-- outside the 64-bit signed range), found by json_nodes (queries/session.sql), which
-- walks the tree one level at a time, as run_metadata.sql does. json_tree carries
-- the whole document on every node, so a report of 30k findings would cost 30k copies of
-- itself; here each level holds the document's text at most once. Paths are written as
-- json_tree writes them; `place` (child indexes from the root) orders nodes as the document
-- does. Input: view `suspects` (row_nr, raw).
-- Output: row_nr, path, literal, number_problem ('non_finite' or 'integer_range').
with roots as (
    select row_nr, json_type(raw) as node_type, raw::json as node
    from suspects
),

nodes as (
    select row_nr, fullkey, place, node_type, node
    from json_nodes(roots)
),

flagged as (
    select
        row_nr,
        place,
        fullkey as path,
        node::varchar as literal,
        case
            when node_type <> 'DOUBLE' or regexp_full_match(node::varchar, '-?[0-9]+')
                then 'integer_range'
            else 'non_finite'
        end as problem
    from nodes
    -- The same predicate as non_finite.sql's.
    where (node_type = 'UBIGINT' and try_cast(node::varchar as ubigint) > 9223372036854775807)
        or (
            node_type = 'DOUBLE'
            and (
                not isfinite(try_cast(node::varchar as double))
                or regexp_full_match(node::varchar, '-?[0-9]+')
            )
        )
)

select
    row_nr,
    arg_min(path, place) as path,
    arg_min(literal, place) as literal,
    arg_min(problem, place) as number_problem
from flagged
group by row_nr
