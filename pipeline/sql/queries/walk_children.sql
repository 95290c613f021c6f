-- The next level of a JSON walk (pipeline/core/jsonwalk.py): the children of every object
-- and list of table walk_level, unnested from its own text, become walk_level. Paths as
-- json_tree writes them: a key that is not a plain identifier quoted, a."b.c", by
-- json_key_step (macros/json_keys.sql, which the views looking keys up use too); list items
-- as [i].
create or replace temp table walk_next as
select
    row_nr,
    fullkey || unnest(
        case
            when node_type = 'OBJECT' then list_transform(keys, lambda k: json_key_step(k))
            else list_transform(range(len(children)::bigint), lambda i: '[' || i || ']')
        end
    ) as fullkey,
    list_append(place, unnest(range(len(children)::bigint))) as place,
    json_type(unnest(children)) as node_type,
    unnest(children) as node
-- Each node's keys and children read once (one parse each), not once per use.
from (
    select
        row_nr,
        fullkey,
        place,
        node_type,
        case when node_type = 'OBJECT' then json_keys(node) end as keys,
        case
            when node_type = 'OBJECT' then json_extract(node, '$.*')
            else json_extract(node, '$[*]')
        end as children
    from walk_level
    where node_type in ('OBJECT', 'ARRAY')
);

drop table walk_level;

alter table walk_next rename to walk_level;
