-- grade.metadata flattened: one row per leaf, list and empty object, keyed by
-- its dotted path below grade.metadata (list items as [i]; a key that is not a plain
-- identifier quoted, as json_tree writes it: a."b.c"). Reads the fragment
-- task_fields.sql extracted.
-- The tree is walked one level at a time, each node's children unnested from its own
-- text: json_tree would carry the whole document on every node, so a list of 100k items
-- would cost 100k copies of the record. Here each level holds at most the document's
-- text once, and nesting is bounded by the reader's depth limit.
-- Input: view `fields` (row_nr, metadata_json). Output: row_nr, key, value (JSON text), value_num.
with recursive nodes (row_nr, fullkey, node_type, node) as (
    select row_nr, '$', 'OBJECT', metadata_json::json
    from fields
    where metadata_json is not null
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

select
    row_nr,
    substr(fullkey, length('$.') + 1) as key,
    node::varchar as value,
    case when node_type in ('UBIGINT', 'BIGINT', 'DOUBLE') then try_cast(node as double) end
        as value_num
from nodes
where fullkey <> '$'
    and (node_type <> 'OBJECT' or node::varchar = '{}')
