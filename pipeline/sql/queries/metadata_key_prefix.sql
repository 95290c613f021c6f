-- How run_metadata's keys below each component begin (json_key_prefix, macros/json_keys.sql:
-- quoted when the name is not a plain identifier, "crash-check".reason), for compare's reasons.
-- Input: view `components` (component). Output: component, prefix.
select component, json_key_prefix(component) as prefix
from components
