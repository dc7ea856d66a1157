"""Simulator adapters. See :mod:`repro.adapters.base` for the contract."""

from repro.adapters.base import Adapter, Evidence, Frozen, Session, get_adapter

__all__ = ["Adapter", "Evidence", "Frozen", "Session", "get_adapter"]
