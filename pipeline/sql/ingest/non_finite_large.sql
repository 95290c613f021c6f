-- non_finite.sql for large records, with the same output and the same rule: the first path
-- (in document order) holding a number no column can hold as written (a non-finite number
-- in any case DuckDB's reader accepts, a literal that overflows a double, or an integer
-- outside the 64-bit signed range), found by walking the tree one level at a time, each
-- node's children unnested from its own text (as run_metadata.sql does). json_tree carries
-- the whole document on every node, so a report of 30k findings would cost 30k copies of
-- itself; here each level holds the document's text at most once. Paths are written as
-- json_tree writes them; `place` (child indexes from the root) orders nodes as the document
-- does. Input: view `suspects` (row_nr, raw).
-- Output: row_nr, path, literal, number_problem ('non_finite' or 'integer_range').
with recursive nodes (row_nr, fullkey, place, node_type, node) as (
    select row_nr, '$', []::bigint[], json_type(raw), raw::json
    from suspects
    union all
    select
        row_nr,
        fullkey || unnest(
            case
                when node_type = 'OBJECT' then list_transform(
                    json_keys(node),
                    lambda k: case
                        when regexp_full_match(k, '[A-Za-z][A-Za-z0-9_]*') then '.' || k
                        else '."' || replace(replace(k, '\', '\\'), '"', '\"') || '"'
                    end
                )
                else list_transform(range(json_array_length(node)::bigint), lambda i: '[' || i || ']')
            end
        ),
        list_append(place, unnest(range(
            case
                when node_type = 'OBJECT' then len(json_keys(node))
                else json_array_length(node)
            end::bigint
        ))),
        json_type(unnest(list_concat(json_extract(node, '$.*'), json_extract(node, '$[*]')))),
        unnest(list_concat(json_extract(node, '$.*'), json_extract(node, '$[*]')))
    from nodes
    where node_type in ('OBJECT', 'ARRAY')
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
