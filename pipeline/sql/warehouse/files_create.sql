-- _lake_files: every lake file the staging tables hold rows of, and what identifies its
-- content (size, mtime), so the next build loads only what was added or changed since.
create table _lake_files (
    tbl varchar not null,
    path varchar not null,
    part varchar not null,
    size bigint not null,
    mtime_ns bigint not null
)
