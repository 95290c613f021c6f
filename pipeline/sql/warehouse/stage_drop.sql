-- Every row of one staging table goes at once. {table} is a registry name.
drop table {table}
