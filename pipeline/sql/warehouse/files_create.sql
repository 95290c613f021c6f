-- _lake_files: every lake file the staging tables hold rows of, and what identifies its
-- content (size, mtime, and the SHA-256 of its bytes), so the next build loads only what
-- was added or changed since: a file rewritten with the same bytes is not loaded again.
create table _lake_files (
    tbl varchar not null,
    path varchar not null,
    part varchar not null,
    size bigint not null,
    mtime_ns bigint not null,
    sha256 varchar not null
)
