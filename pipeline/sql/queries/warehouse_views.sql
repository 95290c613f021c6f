-- Every view of the warehouse file, by name, with its schema (its tables are read back column
-- by column, queries/warehouse_columns.sql): the file is the connection's default database.
select table_schema, table_name
from information_schema.tables
where table_catalog = current_database() and table_type = 'VIEW'
order by table_name, table_schema
