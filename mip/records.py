"""Moved after mip 0.3.0: records are :mod:`mip.experiment.records`, the store :mod:`mip.store`;
importable from here, under the names mip 0.2 gave them, for older scripts."""

from mip.data.columns import JsonColumn, JsonStrings
from mip.data.files import atomic_write, keys_in
from mip.experiment.records import (SCHEMA_VERSION, Attempt, CallOutput, Experiment, Record, Stage, budget_limits,
                                    counted_attempt, schema_error)
from mip.store import Store, iter_records, read_record, record_json

__all__ = ["SCHEMA_VERSION", "Attempt", "CallOutput", "Experiment", "JsonColumn", "JsonStrings", "Record", "Stage",
           "Store", "atomic_write", "budget_limits", "counted_attempt", "iter_records", "keys_in", "read_record",
           "record_json", "schema_error"]
