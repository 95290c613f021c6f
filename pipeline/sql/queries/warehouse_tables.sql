-- Every table and view of the warehouse file, by name: the file is the connection's default
-- database, and other files may be attached beside it (warehouse/file.py), so the catalog
-- is named.
select table_name
from information_schema.tables
where table_catalog = current_database()
order by table_name
