"""The nine scenarios, one module each (config, plan, build); `registry.py` lists them."""
