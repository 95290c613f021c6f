-- What a JSON walk's judge found on every level (pipeline/core/jsonwalk.py), as found.
select * from walk_found
