-- The closing summary of `make run`: each server's latest surface grade and its move.
-- overall as mcp-xray shows it (one decimal, rounded its way), beside its letter.
select server, server_version, versions, overall_display, letter, overall_display_delta
from by_server
order by server
