"""Lines to landed tables: JSON kinds, records, quarantine, dedupe, schema news."""
