"""The scenarios, one module each (config, plan, build); `registry.py` finds them here."""
