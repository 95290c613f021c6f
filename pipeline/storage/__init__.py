"""The lake: layout, atomic writes, transactions, part manifests, state files."""
