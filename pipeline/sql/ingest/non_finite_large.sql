-- non_finite.sql for large records: the first path holding a non-finite number (NaN,
-- Infinity, or a literal that overflows a double), found by walking the tree one level at
-- a time, each node's children unnested from its own text (as run_metadata.sql does).
-- json_tree carries the whole document on every node, so a report of 30k findings would
-- cost 30k copies of itself; here each level holds the document's text at most once.
-- Paths are written as json_tree writes them. Input: view `suspects` (row_nr, raw).
with recursive nodes (row_nr, fullkey, node_type, node) as (
    select row_nr, '$', json_type(raw), raw::json
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
        json_type(unnest(list_concat(json_extract(node, '$.*'), json_extract(node, '$[*]')))),
        unnest(list_concat(json_extract(node, '$.*'), json_extract(node, '$[*]')))
    from nodes
    where node_type in ('OBJECT', 'ARRAY')
)

select row_nr, min(fullkey) as path, min(node) as literal
from nodes
where node_type = 'DOUBLE' and not isfinite(node::double)
group by row_nr
