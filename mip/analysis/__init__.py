"""Analysis: results table, slices, metrics, inference, coverage, headline, the report."""
