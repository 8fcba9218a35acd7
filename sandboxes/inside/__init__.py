"""Code that runs inside a sandbox, on the sandbox's own Python: the supervisor and its process plumbing.

The host never imports these for use: :mod:`sandboxes.supervised` sends their source to ``python3 -c``.
"""
