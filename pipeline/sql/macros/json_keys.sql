-- json_key_step(k): an object key as a step of a path the way json_tree writes it (and so
-- run_metadata.key): `.k` for a plain identifier (an ASCII letter, then ASCII letters, digits
-- or _), else quoted, `."k"`, with \ and " escaped. Every pipeline connection has it too
-- (pipeline/core/sql.py), where the JSON walk (queries/walk_children.sql) builds those keys
-- with it, so the keys and what looks them up (failure_reasons, compare's reasons) quote one
-- way.
create or replace macro json_key_step(k) as case
    when regexp_full_match(k, '[A-Za-z][A-Za-z0-9_]*') then '.' || k
    else '."' || replace(replace(k, '\', '\\'), '"', '\"') || '"'
end;
-- json_key_prefix(k): how run_metadata's keys below the top-level key k begin ("k." or, quoted,
-- "\"crash-check\"."), a component's metadata being the object under its name.
create or replace macro json_key_prefix(k) as substr(json_key_step(k), 2) || '.';
