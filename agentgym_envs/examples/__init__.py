"""Small reference envs written with the SDK, for docs and SDK tests (not benchmark families)."""
