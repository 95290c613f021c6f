-- A .json Inspect log's samples, each as its own JSON text in the log's order, split by
-- DuckDB's JSON parser, which does not recurse: Python's json module fails the whole
-- document when one sample nests past its recursion limit (pipeline/sources/inspect/table.py).
-- $1: the log's text. Output: one row: log_type (the document's json_type), samples_type
-- (that of its samples, null when it has none), samples (each sample's JSON text, with the
-- JSON text of its id and epoch, null when it has none, to name one that cannot be read).
select
    json_type($1::json) as log_type,
    json_type($1::json, '$.samples') as samples_type,
    case
        when json_type($1::json, '$.samples') = 'ARRAY' then list_transform(
            json_extract($1::json, '$.samples[*]'),
            lambda sample: {
                'text': sample::varchar,
                'id': json_extract(sample, '$.id')::varchar,
                'epoch': json_extract(sample, '$.epoch')::varchar
            }
        )
    end as samples
