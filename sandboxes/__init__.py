"""Isolated execution of untrusted commands and code (shared/DESIGN.md §2). Lands with the sandbox issue."""
