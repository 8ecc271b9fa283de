"""Adapters that put fa_opt's attention into other libraries' models."""
