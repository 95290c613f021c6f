select value from _meta where key = ?
