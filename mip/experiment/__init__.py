"""Experiments: instances and the seven patterns, App. B prompts, records, keys, scoring, planning."""
