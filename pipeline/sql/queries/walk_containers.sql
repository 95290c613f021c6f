-- Whether the JSON walk's level (pipeline/core/jsonwalk.py) holds an object or a list, whose
-- children make another level.
select exists (from walk_level where node_type in ('OBJECT', 'ARRAY'))
