"""Sandbox backends: each only starts the supervisor somewhere; :mod:`sandboxes.supervised` does the rest."""
