insert or replace into _meta (key, value) values (?, ?)
