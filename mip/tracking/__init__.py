"""Tracking a job: progress lines and the W&B run and ledger."""
