-- The distinct top-level keys of JSON records (a record's own fields, known or not).
-- Input: view `records` (record). Output: name.
select distinct unnest(json_keys(record)) as name
from records
where json_type(record) = 'OBJECT'
