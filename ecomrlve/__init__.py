"""ecom-rlve: synthetic e-commerce worlds turned into verifiable RL training for LLM agents."""

__version__ = "0.1.0"
