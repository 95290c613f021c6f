-- Rows of the parts whose files were removed or changed since the last build. Bound: the
-- parts. {table} is a registry name.
delete from {table} where list_contains($1, _part)
