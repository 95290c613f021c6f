insert into _meta (key, value) values (?, ?)
