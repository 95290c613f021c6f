-- The first level of a JSON walk (pipeline/core/jsonwalk.py): each document of view
-- `walk_docs` (row_nr, doc: JSON text, null for none) as its root node, path '$', with its
-- json_type. Every level has these columns: row_nr, fullkey (the path as json_tree writes
-- it), place (the child indexes from the root, which order nodes as the document does),
-- node_type (its json_type), node (JSON). A document starting with '{' is an object
-- (every metadata fragment): its type is known without a parse.
create or replace temp table walk_level as
select
    row_nr,
    '$' as fullkey,
    []::bigint[] as place,
    case when starts_with(doc, '{') then 'OBJECT' else json_type(doc) end as node_type,
    doc::json as node
from walk_docs
where doc is not null;
