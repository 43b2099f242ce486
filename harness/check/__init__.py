"""The old home of checking, split by stage (`oracle`, `accumulators`, `matrix`, `search`); its
modules are shims that warn and hand over, kept for one release."""
